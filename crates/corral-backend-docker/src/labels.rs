//! Names and labels: how a container is known to be corral's and what it
//! records, so that every sandbox can be found again from the engine alone.

use std::collections::HashMap;

use corral_backend::{BackendError, Labels, Result, SandboxInfo, SandboxKey, SandboxStatus};
use sha2::{Digest, Sha256};

/// Every container the backend makes carries this label set to `1`.
pub const MANAGED: &str = "corral.docker/managed";
/// The sandbox's own record (key, label names, creation time) as JSON. A
/// container inherits every label of its image — a restored snapshot
/// carries its source's labels — so the record names which labels are the
/// sandbox's own, and every reader trusts only those.
pub const RECORD: &str = "corral.docker/record";
/// Every snapshot image the backend commits carries this label set to `1`.
pub const SNAPSHOT: &str = "corral.docker/snapshot";
/// A snapshot image's own record (id, source, label names, time) as JSON.
pub const SNAPSHOT_RECORD: &str = "corral.docker/snapshot-record";

/// The prefix of every internal label (never shown as a user label).
const INTERNAL: &str = "corral.docker/";

/// The prefix of every sandbox id (and container name).
pub const ID_PREFIX: &str = "dkr-";

/// The repository snapshot images are committed into.
pub const SNAPSHOT_REPO: &str = "corral-snapshot";

/// A fresh random id: `dkr-` and 16 hex digits.
pub fn random_id() -> Result<String> {
    Ok(format!("{ID_PREFIX}{}", random_hex()?))
}

/// 16 random hex digits.
pub fn random_hex() -> Result<String> {
    corral_backend::statefile::random_hex()
        .map_err(|e| BackendError::from_io("reading random bytes", &e))
}

/// The id (and container name) of the sandbox with get-or-create `key`:
/// the engine refuses a second container with the same name, which makes
/// keys exact.
pub fn keyed_id(key: &SandboxKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    format!("{ID_PREFIX}k{}", &hex::encode(digest)[..32])
}

/// Whether `id` could name one of the backend's containers.
pub fn is_sandbox_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|rest| {
        !rest.is_empty()
            && rest.len() <= 40
            && rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'k')
    })
}

/// What a container (or image) records about itself in its own label.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The get-or-create key. One that is no key (the engine's label was
    /// altered) reads as none: the container stays the backend's, listed
    /// and reclaimable, and only get-or-create no longer finds it.
    #[serde(default, deserialize_with = "key_or_none")]
    pub key: Option<SandboxKey>,
    /// The names of the labels given at create (or snapshot).
    pub labels: Vec<String>,
    /// Creation time, epoch milliseconds.
    pub created_at_ms: u64,
    /// For a snapshot: the sandbox it was captured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A recorded key, or none where the value is no valid key.
fn key_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<SandboxKey>, D::Error> {
    let raw: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(raw.and_then(|k| SandboxKey::new(k).ok()))
}

impl Record {
    /// The record as a label value.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record stored under `label`, if any.
    pub fn decode(all: &HashMap<String, String>, label: &str) -> Option<Record> {
        serde_json::from_str(all.get(label)?).ok()
    }
}

/// The labels a record names as its own, with their values. They are made
/// here, from what the engine holds: a pair the engine altered into one no
/// label may be is left out rather than shown.
pub fn user_labels(all: &HashMap<String, String>, record: &Record) -> Labels {
    let mut labels = Labels::new();
    for k in record.labels.iter().filter(|k| !k.starts_with(INTERNAL)) {
        if let Some(v) = all.get(k) {
            let _ = labels.insert(k.clone(), v.clone());
        }
    }
    labels
}

/// The scope a backend was opened with (empty for none): containers and
/// snapshots made by a scoped backend are the only ones it sees.
pub const SCOPE: &str = "corral.docker/scope";

/// The engine's label filter for `wanted` plus `marker=1` (and the scope).
pub fn filter(marker: &str, scope: Option<&str>, wanted: &Labels) -> HashMap<String, Vec<String>> {
    let mut labels = vec![format!("{marker}=1")];
    if let Some(scope) = scope {
        labels.push(format!("{SCOPE}={scope}"));
    }
    labels.extend(wanted.iter().map(|(k, v)| format!("{k}={v}")));
    HashMap::from([("label".to_string(), labels)])
}

/// A sandbox record from a container's name, labels and state; `None`
/// for a container without a record (not one of the backend's).
pub fn info(id: &str, all: &HashMap<String, String>, paused: bool) -> Option<SandboxInfo> {
    let record = Record::decode(all, RECORD)?;
    Some(SandboxInfo {
        id: id.to_string(),
        backend: "docker".into(),
        labels: user_labels(all, &record),
        key: record.key,
        status: if paused {
            SandboxStatus::Paused
        } else {
            SandboxStatus::Running
        },
        created_at_ms: record.created_at_ms,
        expires_at_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// attack (a record label altered on the engine) → the container stays
    /// the backend's: listed, reclaimable, only no longer found by key.
    #[test]
    fn a_record_with_an_altered_key_stays_the_backends() {
        let table = [
            (r#"{"key":"k","labels":[],"created_at_ms":1}"#, Some("k")),
            (r#"{"key":"","labels":[],"created_at_ms":1}"#, None),
            (r#"{"key":"a\u0000b","labels":[],"created_at_ms":1}"#, None),
            (r#"{"key":null,"labels":[],"created_at_ms":1}"#, None),
            (r#"{"labels":[],"created_at_ms":1}"#, None),
        ];
        for (label, key) in table {
            let all = HashMap::from([(RECORD.to_string(), label.to_string())]);
            let record = Record::decode(&all, RECORD).unwrap_or_else(|| panic!("{label} decodes"));
            assert_eq!(record.key.as_deref(), key, "{label}");
        }
    }

    #[test]
    fn ids_are_recognised() {
        assert!(is_sandbox_id(&random_id().unwrap()));
        assert!(is_sandbox_id(&keyed_id(&"some key".try_into().unwrap())));
        assert_eq!(
            keyed_id(&"a".try_into().unwrap()),
            keyed_id(&"a".try_into().unwrap())
        );
        assert_ne!(
            keyed_id(&"a".try_into().unwrap()),
            keyed_id(&"b".try_into().unwrap())
        );
        for bad in ["", "dkr-", "no-such-sandbox", "dkr-../x", "abc123"] {
            assert!(!is_sandbox_id(bad), "{bad}");
        }
    }

    #[test]
    fn only_the_recorded_labels_are_shown() {
        let record = Record {
            key: Some("k".try_into().unwrap()),
            labels: vec!["corral".into()],
            created_at_ms: 7,
            source: None,
        };
        let all = HashMap::from([
            (MANAGED.to_string(), "1".to_string()),
            ("corral".to_string(), "rules".to_string()),
            ("inherited".to_string(), "from-the-image".to_string()),
            (RECORD.to_string(), record.encode()),
        ]);
        let info = info("dkr-1", &all, false).unwrap();
        assert_eq!(info.labels.len(), 1);
        assert_eq!(info.labels["corral"], "rules");
        assert_eq!(info.key.as_deref(), Some("k"));
        assert_eq!(info.created_at_ms, 7);
        assert!(super::info("dkr-1", &HashMap::new(), false).is_none());
    }
}
