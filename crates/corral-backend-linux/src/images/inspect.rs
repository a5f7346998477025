//! [`ImageStore::inspect`]: what one stored image is — its digest, names,
//! layers, and what its config asks of a process (environment, command,
//! user, working directory).

use std::io::Read;

use serde::{Deserialize, Serialize};

use super::error::ImageError;
use super::layout::LayerRecord;
use super::reference::Reference;
use super::source::MAX_JSON_BYTES;
use super::store::{ImageStore, UNNAMED, info};

/// One stored image, in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageDetails {
    /// Its first name (`<none>` when it has none).
    pub name: String,
    /// Every name it answers to.
    pub names: Vec<String>,
    /// `sha256:<hex>` of its config.
    pub digest: String,
    /// The total size of its layers as imported (compressed), in bytes.
    pub size_bytes: u64,
    /// When it was imported, ms since the epoch.
    pub created_at_ms: u64,
    /// Its layers, base first.
    pub layers: Vec<LayerRecord>,
    /// What its config asks of a process.
    pub config: RunConfig,
}

/// The process settings of an image config (OCI `config`, docker's
/// `Env`/`Cmd`/`Entrypoint`/`User`/`WorkingDir`), as the image gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunConfig {
    /// `NAME=VALUE` entries.
    #[serde(default)]
    pub env: Vec<String>,
    /// The default command.
    #[serde(default)]
    pub cmd: Option<Vec<String>>,
    /// The entrypoint.
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    /// The user (`name`, `uid` or `uid:gid`), if set.
    #[serde(default)]
    pub user: Option<String>,
    /// The working directory, if set.
    #[serde(default)]
    pub workdir: Option<String>,
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    config: Option<ConfigSection>,
}

#[derive(Deserialize)]
struct ConfigSection {
    #[serde(rename = "Env", default)]
    env: Option<Vec<String>>,
    #[serde(rename = "Cmd", default)]
    cmd: Option<Vec<String>>,
    #[serde(rename = "Entrypoint", default)]
    entrypoint: Option<Vec<String>>,
    #[serde(rename = "User", default)]
    user: Option<String>,
    #[serde(rename = "WorkingDir", default)]
    workdir: Option<String>,
}

impl RunConfig {
    /// The process settings of a config blob; empty strings are unset.
    pub fn from_config(bytes: &[u8]) -> Result<Self, ImageError> {
        let file: ConfigFile = serde_json::from_slice(bytes)
            .map_err(|e| ImageError::archive(format!("image config: {e}")))?;
        let Some(c) = file.config else {
            return Ok(RunConfig::default());
        };
        let set = |s: Option<String>| s.filter(|s| !s.is_empty());
        Ok(RunConfig {
            env: c.env.unwrap_or_default(),
            cmd: c.cmd,
            entrypoint: c.entrypoint,
            user: set(c.user),
            workdir: set(c.workdir),
        })
    }
}

impl ImageStore {
    /// The stored image `reference` names (by name, `name@sha256:…` or
    /// `sha256:…`), with its config read from the store. The built-in
    /// `host` image has no layers and no config (an empty [`RunConfig`]).
    pub fn inspect(&self, reference: &str) -> Result<ImageDetails, ImageError> {
        if let Reference::Host { .. } = Reference::parse(reference)? {
            let host = self.resolve(reference)?;
            return Ok(ImageDetails {
                names: vec![host.name.clone()],
                name: host.name,
                digest: host.digest,
                size_bytes: 0,
                created_at_ms: 0,
                layers: Vec::new(),
                config: RunConfig::default(),
            });
        }
        let record = self.find(reference)?;
        let path = self.layout.blob(&record.digest);
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_JSON_BYTES).read_to_end(&mut bytes))
            .map_err(|e| ImageError::CorruptRecord {
                path: path.display().to_string(),
                reason: format!("the image config is unreadable ({e}); import the image again"),
            })?;
        let row = info(&record);
        Ok(ImageDetails {
            name: record.name.clone().unwrap_or_else(|| UNNAMED.to_string()),
            names: record.names().map(str::to_string).collect(),
            digest: record.digest.clone(),
            size_bytes: row.size_bytes,
            created_at_ms: record.created_at_ms,
            layers: record.layers.clone(),
            config: RunConfig::from_config(&bytes)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_docker_and_oci_config_fields() {
        let c = RunConfig::from_config(
            br#"{"config":{"Env":["PATH=/bin"],"Cmd":["sh"],"User":"1000:1000","WorkingDir":""},"rootfs":{"diff_ids":[]}}"#,
        )
        .unwrap();
        assert_eq!(c.env, vec!["PATH=/bin"]);
        assert_eq!(c.cmd, Some(vec!["sh".to_string()]));
        assert_eq!(c.user.as_deref(), Some("1000:1000"));
        assert_eq!(c.workdir, None);
        assert_eq!(
            RunConfig::from_config(br#"{"rootfs":{}}"#).unwrap(),
            RunConfig::default()
        );
    }
}
