//! Signed evidence: a [`Report`] in an [`Evidence`] envelope with the
//! provider it was run against, the wire contract revision, the signer's
//! ed25519 public key and a signature, so that anyone holding the public
//! key can check that a run's outcomes are the ones the signer recorded.
//!
//! The signature covers the envelope's canonical byte form: the text
//! `corral-evidence/1` and a newline, then the envelope without its
//! `signature` field as JSON with object keys sorted by their UTF-8 bytes,
//! no insignificant whitespace, and numbers and strings as serde_json
//! writes them. Verifying recomputes that form from the file as it is, so
//! re-indenting the file keeps it valid, while changing any value (a case
//! outcome, a duration, the provider, the signer) refuses it.
//!
//! Key files are one line of lowercase hexadecimal: the 32-byte secret seed
//! (`evidence.key`) or the 32-byte public key (`evidence.pub`); surrounding
//! whitespace is ignored.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use corral_contract::ConformanceCase;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::report::{Outcome, Report};

/// The envelope's format, and the domain separator of its signed bytes.
pub const EVIDENCE_FORMAT: &str = "corral-evidence/1";

/// Why a key or a piece of evidence was refused. Every message is one line.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    /// A key file could not be read or written.
    #[error("key file {path}: {source}")]
    KeyIo {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A key file does not hold 64 hexadecimal digits.
    #[error("key file {path}: expected one line of 64 hexadecimal digits (a 32-byte key)")]
    KeyFormat {
        /// The file.
        path: PathBuf,
    },
    /// A public key file holds bytes that are not an ed25519 point.
    #[error("key file {path}: not an ed25519 public key")]
    NotAPublicKey {
        /// The file.
        path: PathBuf,
    },
    /// The system's random source failed while making a key.
    #[error("reading 32 random bytes: {0}")]
    Random(#[source] std::io::Error),
    /// The evidence file could not be read.
    #[error("evidence file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The report could not be encoded.
    #[error("encoding the evidence: {0}")]
    Encode(#[source] serde_json::Error),
    /// The evidence is not JSON, or lacks a field, or has one of the wrong
    /// type or an unknown one.
    #[error("the evidence is malformed: {0}")]
    Malformed(String),
    /// The evidence names another format.
    #[error("the evidence has format {found:?}; this corral reads {EVIDENCE_FORMAT:?}")]
    Format {
        /// What the file says.
        found: String,
    },
    /// The evidence names a signer other than the key it is checked with.
    #[error("the evidence was signed by key {found}, not by the given key {expected}")]
    WrongSigner {
        /// The given public key, hex.
        expected: String,
        /// The file's signer, hex.
        found: String,
    },
    /// The signature does not cover the evidence as it is.
    #[error(
        "the signature does not match the evidence: it was altered after it was signed, or the \
         signature is not the signer's"
    )]
    BadSignature,
}

/// An ed25519 secret key (its 32-byte seed). Never printed.
pub struct SecretKey(SigningKey);

/// An ed25519 public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl SecretKey {
    /// A new key from 32 bytes of the kernel's random source.
    pub fn generate() -> Result<Self, EvidenceError> {
        let seed =
            corral_backend::statefile::random_bytes::<32>().map_err(EvidenceError::Random)?;
        Ok(Self(SigningKey::from_bytes(&seed)))
    }

    /// The key whose seed is `seed`.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self(SigningKey::from_bytes(&seed))
    }

    /// Reads a secret key file (64 hexadecimal digits).
    pub fn from_file(path: &Path) -> Result<Self, EvidenceError> {
        Ok(Self::from_seed(read_key_bytes(path)?))
    }

    /// The seed as 64 lowercase hexadecimal digits (the key file's line).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey(public {})", self.public().to_hex())
    }
}

impl PublicKey {
    /// Reads a public key file (64 hexadecimal digits).
    pub fn from_file(path: &Path) -> Result<Self, EvidenceError> {
        let bytes = read_key_bytes(path)?;
        VerifyingKey::from_bytes(&bytes)
            .map(Self)
            .map_err(|_| EvidenceError::NotAPublicKey {
                path: path.to_path_buf(),
            })
    }

    /// The key as 64 lowercase hexadecimal digits (the key file's line).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }
}

/// The 32 bytes a key file holds.
fn read_key_bytes(path: &Path) -> Result<[u8; 32], EvidenceError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvidenceError::KeyIo {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = || EvidenceError::KeyFormat {
        path: path.to_path_buf(),
    };
    let bytes = hex::decode(text.trim()).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

/// A signed conformance report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Always [`EVIDENCE_FORMAT`].
    pub format: String,
    /// The provider the suite ran against (e.g. `http://HOST:PORT`).
    pub provider: String,
    /// The wire contract revision the provider spoke.
    pub contract_revision: String,
    /// The report of the run.
    pub report: Report,
    /// The signer's public key, 64 hexadecimal digits.
    pub signer: String,
    /// The ed25519 signature of the canonical byte form, 128 hexadecimal
    /// digits.
    pub signature: String,
}

impl Evidence {
    /// Signs `report`, run against `provider` speaking `contract_revision`,
    /// with `key`.
    pub fn sign(
        report: &Report,
        provider: &str,
        contract_revision: &str,
        key: &SecretKey,
    ) -> Result<Self, EvidenceError> {
        let mut evidence = Self {
            format: EVIDENCE_FORMAT.into(),
            provider: provider.into(),
            contract_revision: contract_revision.into(),
            report: report.clone(),
            signer: key.public().to_hex(),
            signature: String::new(),
        };
        let value = serde_json::to_value(&evidence).map_err(EvidenceError::Encode)?;
        let bytes = signed_bytes(&value)?;
        evidence.signature = hex::encode(key.0.sign(&bytes).to_bytes());
        Ok(evidence)
    }

    /// The envelope as pretty JSON.
    pub fn to_json(&self) -> Result<String, EvidenceError> {
        serde_json::to_string_pretty(self).map_err(EvidenceError::Encode)
    }

    /// Checks `text` (an evidence file's content) against `key`: the signer
    /// it names must be `key` and the signature must cover it as it is.
    /// Returns the evidence once it is proven authentic.
    pub fn verify(text: &str, key: &PublicKey) -> Result<Self, EvidenceError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| EvidenceError::Malformed(e.to_string()))?;
        let field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| EvidenceError::Malformed(format!("no string field {name:?}")))
        };
        let format = field("format")?;
        if format != EVIDENCE_FORMAT {
            return Err(EvidenceError::Format {
                found: format.into(),
            });
        }
        let signer = field("signer")?;
        if signer != key.to_hex() {
            return Err(EvidenceError::WrongSigner {
                expected: key.to_hex(),
                found: signer.into(),
            });
        }
        let signature = hex::decode(field("signature")?)
            .ok()
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
            .map(|b| Signature::from_bytes(&b))
            .ok_or_else(|| {
                EvidenceError::Malformed("the signature is not 128 hexadecimal digits".into())
            })?;
        let bytes = signed_bytes(&value)?;
        key.0
            .verify_strict(&bytes, &signature)
            .map_err(|_| EvidenceError::BadSignature)?;
        serde_json::from_value(value).map_err(|e| EvidenceError::Malformed(e.to_string()))
    }

    /// Reads the evidence file at `path` and [verifies](Self::verify) it.
    pub fn verify_file(path: &Path, key: &PublicKey) -> Result<Self, EvidenceError> {
        let text = std::fs::read_to_string(path).map_err(|source| EvidenceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::verify(&text, key)
    }

    /// What the evidence proves, for people: the signer, the provider and
    /// revision, the target and run, one line per case (passed ones with
    /// what they prove, the others with their reason), and the counts.
    pub fn proven(&self) -> String {
        let r = &self.report;
        let mut out = format!(
            "evidence: signature valid, signed by ed25519 key {}\n",
            self.signer
        );
        let _ = writeln!(
            out,
            "provider: {} (contract revision {})",
            self.provider, self.contract_revision
        );
        let _ = writeln!(
            out,
            "run: target {}, corral {}, from {} to {}",
            r.target, r.corral_version, r.started_at, r.finished_at
        );
        let tokens: Vec<&str> = r.run.tokens.iter().map(|t| t.as_str()).collect();
        let _ = writeln!(out, "tokens: {}", tokens.join(", "));
        let width = r
            .cases
            .iter()
            .map(|c| c.name.as_str().len())
            .max()
            .unwrap_or(0);
        for c in &r.cases {
            let why = match c.outcome {
                Outcome::Passed => proves(c.name),
                Outcome::Failed | Outcome::Skipped => c.reason.as_deref().unwrap_or(""),
            };
            let line = format!(
                "{:<7}  {:<width$}  {why}",
                c.outcome.as_str(),
                c.name.as_str()
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out.push_str(&r.summary());
        out.push('\n');
        out
    }
}

/// What a passing `case` proves, in one line.
pub fn proves(case: ConformanceCase) -> &'static str {
    match case {
        ConformanceCase::StageSealExecute => {
            "declared mounts stage, read-only data seals, command output is bounded"
        }
        ConformanceCase::StageGitProject => {
            "an immutable Git blob stages without a sandbox credential"
        }
        ConformanceCase::CheckpointClone => {
            "a clone lands in an independent target-Session snapshot"
        }
        ConformanceCase::AllowlistEgress => "only the declared outbound destinations are reachable",
        ConformanceCase::DurableRoundTrip => "files survive snapshot, release and resume",
        ConformanceCase::NoneEgress => "outbound traffic is denied for a none-network profile",
        ConformanceCase::ZdrRelease => "ZDR snapshots are forbidden and release destroys all state",
        ConformanceCase::OrphanReclaim => {
            "orphaned instances are reclaimed by a runtime restarted from nothing"
        }
        ConformanceCase::PausePinning => {
            "a pinned snapshot survives orphan cleanup until its own expiry"
        }
    }
}

/// The bytes the signature covers: the domain separator, a newline, and
/// the canonical JSON of `envelope` without its `signature` field.
fn signed_bytes(envelope: &Value) -> Result<Vec<u8>, EvidenceError> {
    let Value::Object(fields) = envelope else {
        return Err(EvidenceError::Malformed("not a JSON object".into()));
    };
    let mut unsigned = fields.clone();
    unsigned.remove("signature");
    let mut out = format!("{EVIDENCE_FORMAT}\n");
    canonical_json(&Value::Object(unsigned), &mut out);
    Ok(out.into_bytes())
}

/// `value` as JSON with object keys sorted and no whitespace.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.push_str(&value.to_string());
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(&fields[key], out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_and_drops_whitespace() {
        let value: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": "x\n", "a": null}], "a": true }"#).unwrap();
        let mut out = String::new();
        canonical_json(&value, &mut out);
        assert_eq!(out, r#"{"a":true,"b":[1,{"a":null,"z":"x\n"}]}"#);
    }

    #[test]
    fn a_secret_key_is_never_printed() {
        let key = SecretKey::from_seed([9; 32]);
        let shown = format!("{key:?}");
        assert!(!shown.contains(&key.to_hex()), "{shown}");
        assert!(shown.contains(&key.public().to_hex()));
    }
}
