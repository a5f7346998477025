//! What the linux backend's integration tests share: a backend on a
//! temporary state directory that destroys everything a test left.

use corral_backend_linux::LinuxBackend;

/// The state directory of a test; whatever the test left is destroyed when
/// it drops, before the directory is removed.
pub struct StateDir(pub LinuxBackend, pub Option<tempfile::TempDir>);

/// How long a test waits for the reapers of its destroys to finish (a
/// bound on polling, never a measured time).
pub const REAPED: std::time::Duration = std::time::Duration::from_secs(30);

/// The outer init of PID 1 `init_pid` (its parent, a `corral-init`).
pub fn outer_init_of(init_pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{init_pid}/stat")).ok()?;
    let after = stat.rsplit_once(") ")?.1;
    after.split(' ').nth(1)?.parse().ok()
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = self.0.destroy_all();
        drop(self.1.take());
    }
}

impl StateDir {
    /// The temporary state directory.
    pub fn path(&self) -> &std::path::Path {
        self.1
            .as_ref()
            .map_or(std::path::Path::new(""), |d| d.path())
    }
}

/// A backend on a fresh temporary state directory, or `None` (after
/// printing `SKIP <test>: <reason>`) where this host cannot run linux
/// sandboxes.
pub fn backend(test: &str) -> Option<(LinuxBackend, StateDir)> {
    // SAFETY: set before any sandbox is made; every test sets the same value.
    unsafe { std::env::set_var("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init")) };
    if let Err(reason) = LinuxBackend::available() {
        println!("SKIP {test}: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = LinuxBackend::open(dir.path()).unwrap();
    Some((b.clone(), StateDir(b, Some(dir))))
}

/// How many mounts of this process's mount table lie under `dir`.
pub fn mounts_under(dir: &std::path::Path) -> usize {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let needle = dir.to_string_lossy().into_owned();
    text.lines().filter(|l| l.contains(&needle)).count()
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Runs `script` with `sh -c` in sandbox `id` (a 30 s exec limit, and the
/// test fails if the exec has not settled after 60 s); returns the shell
/// exit code, stdout and stderr.
pub async fn run(b: &LinuxBackend, id: &str, script: &str) -> (i32, String, String) {
    use corral_backend::{Backend, CollectedOutput, Command, ExecRequest};
    use std::time::Duration;
    let mut out = CollectedOutput::default();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        b.exec(
            id,
            ExecRequest::new(Command::shell(script).unwrap()).timeout(Duration::from_secs(30)),
            &mut out,
        ),
    )
    .await
    .expect("exec settles")
    .unwrap_or_else(|e| panic!("{script}: {e}"));
    (
        outcome.status.shell_code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `script` in sandbox `id` as [`run`] does and asserts it exits 0;
/// returns its stdout.
pub async fn sh(b: &LinuxBackend, id: &str, script: &str) -> String {
    let (code, out, err) = run(b, id, script).await;
    assert_eq!(code, 0, "{script}: {err}");
    out
}

/// Writes an OCI image layout in `dir` holding one image, `name`, of the
/// single uncompressed layer `layer` (a tar archive).
pub fn one_layer_oci_layout(dir: &std::path::Path, name: &str, layer: &[u8]) {
    use sha2::Digest;
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| -> (String, usize) {
        let hex = hex::encode(sha2::Sha256::digest(bytes));
        std::fs::write(blobs.join(&hex), bytes).unwrap();
        (format!("sha256:{hex}"), bytes.len())
    };
    let (layer_digest, layer_size) = put(layer);
    let config = serde_json::json!({
        "architecture": "amd64", "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]}
    });
    let (config_digest, config_size) = put(config.to_string().as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": layer_size}]
    });
    let (manifest_digest, manifest_size) = put(manifest.to_string().as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": manifest_digest, "size": manifest_size,
                       "annotations": {"org.opencontainers.image.ref.name": name}}]
    });
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
}

/// Cgroup directories named `id` under corral's parent, in any controller.
pub fn cgroups_named(id: &str) -> Vec<std::path::PathBuf> {
    let Ok(cg) = corral_backend_linux::cgroup::Cgroups::detect() else {
        return Vec::new();
    };
    let parent = cg.parent_dir();
    let mut found: Vec<std::path::PathBuf> = parent
        .join(id)
        .exists()
        .then(|| parent.join(id))
        .into_iter()
        .collect();
    // On v1 the same relative path repeats under every controller's mount.
    let rel: std::path::PathBuf = parent.components().skip(5).collect();
    if let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") {
        for e in entries.flatten() {
            let p = e.path().join(&rel).join(id);
            if p.exists() && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    found
}
