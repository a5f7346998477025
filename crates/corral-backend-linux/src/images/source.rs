//! Reading an import source — an OCI image layout or a `docker save`
//! archive, already available as a directory — into an [`ImportPlan`]: the
//! config (whose digest names the image) and the layers, base first.
//!
//! Every file is opened with [`open_in_root`], so a hostile layout cannot
//! make the store read outside it; every JSON blob is size-limited and
//! checked against the digest that names it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::digest::{SHA256_PREFIX, digest_of, parse_digest};
use super::error::ImageError;
use super::unpack::open_in_root;

/// The largest JSON document (index, manifest, config) read.
pub const MAX_JSON_BYTES: u64 = 8 << 20;
/// How deep nested OCI indexes are followed.
const MAX_INDEX_DEPTH: usize = 3;

/// One layer to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerSource {
    /// The layer file, relative to the source root.
    pub rel_path: String,
    /// The `sha256:` digest of the file as stored, when the format names it.
    pub blob_digest: Option<String>,
    /// The `sha256:` digest of the uncompressed tar (the config's `diff_id`).
    pub diff_id: String,
}

/// What an import source holds.
#[derive(Debug, Clone)]
pub struct ImportPlan {
    /// The `sha256:` digest of the config: the image's digest.
    pub config_digest: String,
    /// The config as stored.
    pub config: Vec<u8>,
    /// The OCI manifest (or, for `docker save`, the archive's manifest entry).
    pub manifest: serde_json::Value,
    /// The layers, base first.
    pub layers: Vec<LayerSource>,
    /// The name the archive gives the image, if any (not yet validated).
    pub suggested_name: Option<String>,
}

#[derive(Deserialize)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
}

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Config {
    rootfs: RootFs,
}

#[derive(Deserialize)]
struct RootFs {
    #[serde(default)]
    diff_ids: Vec<String>,
}

#[derive(Deserialize)]
struct DockerEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers", default)]
    layers: Vec<String>,
}

const NAME_ANNOTATIONS: [&str; 2] = [
    "io.containerd.image.name",
    "org.opencontainers.image.ref.name",
];

/// Reads the source at `root`; `name` picks among several images.
pub fn plan(root: &Path, name: Option<&str>) -> Result<ImportPlan, ImageError> {
    if exists(root, "index.json") {
        oci_plan(root, name)
    } else if exists(root, "manifest.json") {
        docker_plan(root, name)
    } else {
        Err(ImageError::archive(
            "neither an OCI image layout (index.json) nor a docker save archive (manifest.json)",
        ))
    }
}

fn exists(root: &Path, rel: &str) -> bool {
    open_in_root(root, rel).is_ok()
}

fn read_limited(root: &Path, rel: &str) -> Result<Vec<u8>, ImageError> {
    let file = open_in_root(root, rel)?;
    let mut buf = Vec::new();
    file.take(MAX_JSON_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ImageError::io(format!("reading {rel:?}"), e))?;
    if buf.len() as u64 > MAX_JSON_BYTES {
        return Err(ImageError::archive(format!("{rel:?} is larger than 8 MiB")));
    }
    Ok(buf)
}

fn parse<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T, ImageError> {
    serde_json::from_slice(bytes).map_err(|e| ImageError::archive(format!("{what}: {e}")))
}

fn blob_path(digest: &str) -> Result<String, ImageError> {
    let hex = parse_digest(digest)
        .ok_or_else(|| ImageError::archive(format!("unsupported digest {digest:?}")))?;
    Ok(format!("blobs/sha256/{hex}"))
}

/// Reads the blob `d` names and checks its digest and size.
fn read_blob(root: &Path, d: &Descriptor) -> Result<Vec<u8>, ImageError> {
    let bytes = read_limited(root, &blob_path(&d.digest)?)?;
    let actual = digest_of(&bytes);
    if actual != d.digest {
        return Err(ImageError::DigestMismatch {
            what: format!("blob {}", d.digest),
            expected: d.digest.clone(),
            actual,
        });
    }
    if d.size.is_some_and(|s| s != bytes.len() as u64) {
        return Err(ImageError::archive(format!(
            "blob {} has the wrong size",
            d.digest
        )));
    }
    Ok(bytes)
}

fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

fn is_index(d: &Descriptor) -> bool {
    d.media_type.ends_with("image.index.v1+json") || d.media_type.ends_with("manifest.list.v2+json")
}

/// The manifests reachable from `index`, nested indexes followed, other
/// platforms left out.
fn collect(
    root: &Path,
    index: Index,
    depth: usize,
    out: &mut Vec<Descriptor>,
) -> Result<(), ImageError> {
    for d in index.manifests {
        if let Some(p) = &d.platform
            && (p.os != "linux" || p.architecture != host_arch())
        {
            continue;
        }
        if is_index(&d) {
            if depth >= MAX_INDEX_DEPTH {
                return Err(ImageError::archive("image indexes nested too deep"));
            }
            let nested: Index = parse(&read_blob(root, &d)?, "nested index")?;
            collect(root, nested, depth + 1, out)?;
        } else {
            out.push(d);
        }
    }
    Ok(())
}

fn oci_plan(root: &Path, name: Option<&str>) -> Result<ImportPlan, ImageError> {
    let index: Index = parse(&read_limited(root, "index.json")?, "index.json")?;
    let mut found = Vec::new();
    collect(root, index, 0, &mut found)?;
    if found.len() > 1
        && let Some(name) = name
    {
        found.retain(|d| {
            NAME_ANNOTATIONS
                .iter()
                .any(|k| d.annotations.get(*k).is_some_and(|v| v == name))
        });
    }
    let d = match found.len() {
        1 => found.remove(0),
        0 => {
            return Err(ImageError::archive(
                "no image for this platform (or of that name) in the layout",
            ));
        }
        n => {
            return Err(ImageError::archive(format!(
                "the layout holds {n} images; name the one to import"
            )));
        }
    };
    let suggested_name = NAME_ANNOTATIONS
        .iter()
        .find_map(|k| d.annotations.get(*k).cloned());
    let manifest_bytes = read_blob(root, &d)?;
    let manifest: Manifest = parse(&manifest_bytes, "image manifest")?;
    let config = read_blob(root, &manifest.config)?;
    let diff_ids = diff_ids(&config, manifest.layers.len())?;
    let layers = manifest
        .layers
        .iter()
        .zip(diff_ids)
        .map(|(l, diff_id)| {
            Ok(LayerSource {
                rel_path: blob_path(&l.digest)?,
                blob_digest: Some(l.digest.clone()),
                diff_id,
            })
        })
        .collect::<Result<Vec<_>, ImageError>>()?;
    Ok(ImportPlan {
        config_digest: manifest.config.digest.clone(),
        config,
        manifest: parse(&manifest_bytes, "image manifest")?,
        layers,
        suggested_name,
    })
}

fn docker_plan(root: &Path, name: Option<&str>) -> Result<ImportPlan, ImageError> {
    let bytes = read_limited(root, "manifest.json")?;
    let mut entries: Vec<DockerEntry> = parse(&bytes, "manifest.json")?;
    let raw: Vec<serde_json::Value> = parse(&bytes, "manifest.json")?;
    let mut raw = raw.into_iter();
    let mut with_raw: Vec<(DockerEntry, serde_json::Value)> = entries
        .drain(..)
        .map(|e| (e, raw.next().unwrap_or_default()))
        .collect();
    if with_raw.len() > 1
        && let Some(name) = name
    {
        with_raw.retain(|(e, _)| e.repo_tags.iter().flatten().any(|t| t == name));
    }
    let (entry, manifest) = match with_raw.len() {
        1 => with_raw.remove(0),
        0 => {
            return Err(ImageError::archive(
                "no image (of that name) in manifest.json",
            ));
        }
        n => {
            return Err(ImageError::archive(format!(
                "the archive holds {n} images; name the one to import"
            )));
        }
    };
    let config = read_limited(root, &entry.config)?;
    let config_digest = digest_of(&config);
    if let Some(hex) = named_hex(&entry.config)
        && config_digest != format!("{SHA256_PREFIX}{hex}")
    {
        return Err(ImageError::DigestMismatch {
            what: format!("config {:?}", entry.config),
            expected: format!("{SHA256_PREFIX}{hex}"),
            actual: config_digest,
        });
    }
    let diff_ids = diff_ids(&config, entry.layers.len())?;
    let layers = entry
        .layers
        .iter()
        .zip(diff_ids)
        .map(|(path, diff_id)| LayerSource {
            rel_path: path.clone(),
            blob_digest: named_hex(path).map(|h| format!("{SHA256_PREFIX}{h}")),
            diff_id,
        })
        .collect();
    Ok(ImportPlan {
        config_digest,
        config,
        manifest,
        layers,
        suggested_name: entry.repo_tags.into_iter().flatten().next(),
    })
}

/// The hex digest a `docker save` path carries: `blobs/sha256/<hex>` or `<hex>.json`.
fn named_hex(path: &str) -> Option<&str> {
    let last = path.rsplit('/').next()?;
    let hex = last.strip_suffix(".json").unwrap_or(last);
    let in_blobs = path.contains("sha256/") || path.ends_with(".json");
    let ok = hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (in_blobs && ok).then_some(hex)
}

fn diff_ids(config: &[u8], layers: usize) -> Result<Vec<String>, ImageError> {
    let config: Config = parse(config, "image config")?;
    let ids = config.rootfs.diff_ids;
    if ids.len() != layers {
        return Err(ImageError::archive(format!(
            "the config lists {} diff_ids for {layers} layers",
            ids.len()
        )));
    }
    if let Some(bad) = ids.iter().find(|d| parse_digest(d).is_none()) {
        return Err(ImageError::archive(format!("unsupported diff_id {bad:?}")));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_hex_reads_docker_paths() {
        let h = "ab".repeat(32);
        assert_eq!(named_hex(&format!("blobs/sha256/{h}")), Some(h.as_str()));
        assert_eq!(named_hex(&format!("{h}.json")), Some(h.as_str()));
        assert_eq!(named_hex(&format!("{h}/layer.tar")), None);
    }
}
