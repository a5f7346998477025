//! Small images made by the tests: uncompressed tar layers, their config
//! and manifest, each with its digest, as a registry serves them.

use corral_backend_linux::images::digest::digest_of;

/// One blob and its digest.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: String,
    pub bytes: Vec<u8>,
}

impl Blob {
    pub fn new(bytes: Vec<u8>) -> Self {
        Blob {
            digest: digest_of(&bytes),
            bytes,
        }
    }
}

/// An image: layers, config, manifest.
#[derive(Debug, Clone)]
pub struct TestImage {
    pub layers: Vec<Blob>,
    pub config: Blob,
    pub manifest: Blob,
}

/// The OCI manifest media type.
pub const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The OCI index media type.
pub const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// This host's architecture as OCI names it.
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// A tar of `files` (path, mode, content), directories implied.
pub fn tar_of(files: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, mode, content) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(content.len() as u64);
        h.set_mode(*mode);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, *content).unwrap();
    }
    b.into_inner().unwrap()
}

/// A tar with one entry whose name is written as is — `../x` or `/x`,
/// which the tar crate's own path setters refuse to write.
pub fn raw_tar(name: &str, content: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_size(content.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut out = h.as_bytes().to_vec();
    out.extend_from_slice(content);
    out.resize(512 + content.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0; 1024]);
    out
}

impl TestImage {
    /// An image of `layers`, with `cmd` and `env` in its config.
    pub fn new(layers: Vec<Vec<u8>>, cmd: &[&str], env: &[&str]) -> Self {
        let layers: Vec<Blob> = layers.into_iter().map(Blob::new).collect();
        let config = serde_json::json!({
            "architecture": host_arch(), "os": "linux",
            "config": {"Env": env, "Cmd": cmd, "User": "0:0", "WorkingDir": "/"},
            "rootfs": {"type": "layers",
                       "diff_ids": layers.iter().map(|l| l.digest.clone()).collect::<Vec<_>>()},
        });
        let config = Blob::new(config.to_string().into_bytes());
        Self::with_sizes(layers, config, None)
    }

    /// The same image with its manifest declaring `sizes` for its layers
    /// (a lie when they differ from the blobs).
    pub fn with_sizes(layers: Vec<Blob>, config: Blob, sizes: Option<Vec<usize>>) -> Self {
        let sizes = sizes.unwrap_or_else(|| layers.iter().map(|l| l.bytes.len()).collect());
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config.digest, "size": config.bytes.len()},
            "layers": layers.iter().zip(&sizes).map(|(l, size)| serde_json::json!({
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": l.digest, "size": size})).collect::<Vec<_>>(),
        });
        TestImage {
            manifest: Blob::new(manifest.to_string().into_bytes()),
            layers,
            config,
        }
    }

    /// An index listing this image under each `os/arch` of `platforms`.
    pub fn index(&self, platforms: &[(&str, &str)]) -> Blob {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX_TYPE,
            "manifests": platforms.iter().map(|(os, arch)| serde_json::json!({
                "mediaType": MANIFEST_TYPE, "digest": self.manifest.digest,
                "size": self.manifest.bytes.len(),
                "platform": {"os": os, "architecture": arch}})).collect::<Vec<_>>(),
        });
        Blob::new(index.to_string().into_bytes())
    }
}

/// A two-layer image whose first layer is the host's static busybox (as
/// `/bin/busybox`) and whose second holds a marker file; `None` without
/// `/bin/busybox`.
pub fn busybox_image() -> Option<TestImage> {
    let busybox = std::fs::read("/bin/busybox").ok()?;
    Some(TestImage::new(
        vec![
            tar_of(&[("bin/busybox", 0o755, &busybox)]),
            tar_of(&[("etc/corral-pulled", 0o644, b"pulled\n")]),
        ],
        &["/bin/busybox", "sh"],
        &["PATH=/bin", "CORRAL_TEST=1"],
    ))
}

/// A tar whose first entry is a symlink `link` to `target` and whose
/// second writes `link/name`: a write through a link the archive planted.
pub fn symlink_then_write(link: &str, target: &str, name: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    h.set_mode(0o777);
    b.append_link(&mut h, link, target).unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(6);
    h.set_mode(0o644);
    b.append_data(&mut h, format!("{link}/{name}"), &b"pwned\n"[..])
        .unwrap();
    b.into_inner().unwrap()
}
