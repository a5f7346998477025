//! Registry credentials from Docker's client config: `$DOCKER_CONFIG/config.json`,
//! else `~/.docker/config.json`, its `auths.<registry>.auth` (base64 of
//! `user:password`). No file, or no entry for the registry, is an anonymous
//! pull. Credential helpers (`credsStore`, `credHelpers`) are not run.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::pull_error::PullError;

/// The largest config file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The credentials for one registry and where they were looked for.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// What to authenticate with (`Anonymous` when no entry was found).
    pub auth: RegistryAuth,
    /// The config file looked in, for messages.
    pub source: PathBuf,
}

impl Credentials {
    /// Whether an entry for the registry was found.
    pub fn found(&self) -> bool {
        !matches!(self.auth, RegistryAuth::Anonymous)
    }
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
}

/// Where Docker's client config is.
pub fn config_path() -> PathBuf {
    match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => PathBuf::from(dir).join("config.json"),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root"))
            .join(".docker/config.json"),
    }
}

/// A registry as an `auths` key names it: scheme and path dropped, Docker
/// Hub's several names made one.
fn normalize(key: &str) -> String {
    let bare = key.split_once("://").map_or(key, |(_, rest)| rest);
    let host = bare.split('/').next().unwrap_or(bare).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_string()
        }
        _ => host,
    }
}

/// The credentials for `registry` from the config at `path`.
pub fn for_registry(path: &Path, registry: &str) -> Result<Credentials, PullError> {
    let anonymous = Credentials {
        auth: RegistryAuth::Anonymous,
        source: path.to_path_buf(),
    };
    let bad = |reason: String| PullError::CredentialsFile {
        path: path.display().to_string(),
        reason,
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(anonymous),
        Err(e) => return Err(bad(e.to_string())),
    };
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(bad("larger than 1 MiB".into()));
    }
    let config: ConfigFile =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not Docker's config: {e}")))?;
    let wanted = normalize(registry);
    let Some((key, entry)) = config.auths.iter().find(|(k, _)| normalize(k) == wanted) else {
        return Ok(anonymous);
    };
    let Some(encoded) = entry.auth.as_deref().filter(|a| !a.is_empty()) else {
        return Ok(anonymous);
    };
    let field = format!("auths.{key}.auth");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| bad(format!("{field} is not base64")))?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad(format!("{field} is not UTF-8")))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| bad(format!("{field} is not base64 of user:password")))?;
    Ok(Credentials {
        auth: RegistryAuth::Basic(user.to_string(), password.to_string()),
        source: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, json: &str) -> PathBuf {
        let p = dir.join("config.json");
        std::fs::write(&p, json).unwrap();
        p
    }

    #[test]
    fn finds_the_registry_entry_and_decodes_user_and_password() {
        let dir = tempfile::tempdir().unwrap();
        // base64("u:p:w") — a password may hold ':'.
        let p = config(
            dir.path(),
            r#"{"auths":{"https://index.docker.io/v1/":{"auth":"dTpwOnc="},"127.0.0.1:5000":{"auth":"YTpi"}}}"#,
        );
        let hub = for_registry(&p, "index.docker.io").unwrap();
        assert!(matches!(hub.auth, RegistryAuth::Basic(ref u, ref pw) if u == "u" && pw == "p:w"));
        let local = for_registry(&p, "127.0.0.1:5000").unwrap();
        assert!(matches!(local.auth, RegistryAuth::Basic(ref u, ref pw) if u == "a" && pw == "b"));
        assert!(!for_registry(&p, "ghcr.io").unwrap().found());
        assert!(
            !for_registry(&dir.path().join("none.json"), "ghcr.io")
                .unwrap()
                .found()
        );
    }

    #[test]
    fn a_malformed_file_is_one_line_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            (
                r#"{"auths":{"r.example":{"auth":"!!"}}}"#,
                "auths.r.example.auth is not base64",
            ),
            (
                r#"{"auths":{"r.example":{"auth":"bm9jb2xvbg=="}}}"#,
                "not base64 of user:password",
            ),
            ("not json", "not Docker's config"),
        ];
        for (json, want) in rows {
            let p = config(dir.path(), json);
            let line = for_registry(&p, "r.example").unwrap_err().to_string();
            assert!(
                line.contains(want) && line.contains("config.json"),
                "{line}"
            );
        }
    }
}
