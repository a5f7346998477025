//! `corral evidence`: make the ed25519 key pair that signs conformance
//! evidence, and verify signed evidence.
//!
//! - `corral evidence keygen DIR` writes `DIR/evidence.key` (the 32-byte
//!   secret seed as 64 hexadecimal digits, mode 0600) and `DIR/evidence.pub`
//!   (the public key, likewise), refusing to replace either.
//! - `corral evidence verify FILE --key PUBFILE` checks that FILE was signed
//!   by PUBFILE's key and not altered since, then prints what it proves: the
//!   provider, the contract revision, the run, and each case's outcome.
//!   Exit 0 when the evidence is authentic, 1 when it is refused, 2 when
//!   `--key` is no key file, or is the signer's secret key (which a key
//!   file's format cannot tell from a public one: it is recognised by
//!   deriving the signer from it).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use corral_conformance::{Evidence, EvidenceError, PublicKey, SecretKey};

use crate::error::{CliError, CliResult};

/// `corral evidence` subcommands.
#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Verify signed conformance evidence with the signer's public key and
    /// print what it proves.
    Verify {
        /// The evidence file (`corral conformance --sign KEY --json FILE`).
        file: PathBuf,
        /// The signer's public key file (64 hexadecimal digits).
        #[arg(long, value_name = "PUBFILE")]
        key: PathBuf,
    },
    /// Write a new ed25519 key pair: DIR/evidence.key (secret) and
    /// DIR/evidence.pub (public).
    Keygen {
        /// The directory to write the key pair into (created if missing).
        dir: PathBuf,
    },
}

/// Runs `corral evidence`.
pub async fn evidence(cmd: EvidenceCommand) -> CliResult {
    match cmd {
        EvidenceCommand::Verify { file, key } => verify(&file, &key),
        EvidenceCommand::Keygen { dir } => keygen(&dir),
    }
}

fn verify(file: &Path, key_path: &Path) -> CliResult {
    // A secret key file looks like a public one (64 hexadecimal digits):
    // read as a public key it is no curve point, or another key than the
    // signer's. Where it is the signer's secret key, say so.
    let secret_given = || {
        signers_secret_key(file, key_path).then(|| {
            CliError::usage(format!(
                "--key {}: this is the signer's secret key, not its public key; give the \
                 public key (the evidence.pub `corral evidence keygen` wrote beside it)",
                key_path.display()
            ))
        })
    };
    let key = PublicKey::from_file(key_path).map_err(|e| match e {
        EvidenceError::NotAPublicKey { .. } => {
            secret_given().unwrap_or_else(|| CliError::usage(format!("--key: {e}")))
        }
        _ => CliError::usage(format!("--key: {e}")),
    })?;
    let evidence = Evidence::verify_file(file, &key).map_err(|e| match e {
        EvidenceError::Io { .. } => CliError::failure("io", e.to_string()),
        EvidenceError::WrongSigner { .. } => secret_given()
            .unwrap_or_else(|| CliError::failure("evidence", format!("{}: {e}", file.display()))),
        _ => CliError::failure("evidence", format!("{}: {e}", file.display())),
    })?;
    print!("{}", evidence.proven());
    Ok(0)
}

/// Whether `key_path`, read as a secret key, is the key whose public half
/// the evidence `file` names as its signer.
fn signers_secret_key(file: &Path, key_path: &Path) -> bool {
    let Ok(secret) = SecretKey::from_file(key_path) else {
        return false;
    };
    let signer = std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("signer").and_then(|s| s.as_str()).map(str::to_owned));
    signer.is_some_and(|signer| signer == secret.public().to_hex())
}

fn keygen(dir: &Path) -> CliResult {
    let io = |what: &Path, e: std::io::Error| {
        CliError::failure("io", format!("writing {}: {e}", what.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let secret_path = dir.join("evidence.key");
    let public_path = dir.join("evidence.pub");
    for path in [&secret_path, &public_path] {
        if path.exists() {
            return Err(CliError::usage(format!(
                "{} exists; keygen never replaces a key",
                path.display()
            )));
        }
    }
    let key = SecretKey::generate().map_err(|e| CliError::failure("io", e.to_string()))?;
    write_new(&secret_path, &key.to_hex(), 0o600).map_err(|e| io(&secret_path, e))?;
    if let Err(e) = write_new(&public_path, &key.public().to_hex(), 0o644) {
        // Never leave half a pair behind.
        let _ = std::fs::remove_file(&secret_path);
        return Err(io(&public_path, e));
    }
    println!("secret key: {}", secret_path.display());
    println!(
        "public key: {} ({})",
        public_path.display(),
        key.public().to_hex()
    );
    Ok(0)
}

/// Creates `path` (it must not exist) with `mode`, holding `line`.
fn write_new(path: &Path, line: &str, mode: u32) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    writeln!(file, "{line}")?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_conformance::{ContractRun, Report};
    use corral_contract::{SandboxProviderCapabilities, Timestamp};
    use std::os::unix::fs::PermissionsExt as _;

    /// Evidence of an empty run signed by the key of `seed`, in `dir`.
    fn signed_evidence(dir: &Path, seed: u8) -> PathBuf {
        let envelope = SandboxProviderCapabilities::minimum();
        let tokens = envelope.conformance_tokens();
        let at = Timestamp::parse("2026-11-29T23:00:00.000Z").unwrap();
        let report = Report {
            target: "remote".into(),
            run: ContractRun { envelope, tokens },
            cases: Vec::new(),
            corral_version: "0.1.0".into(),
            started_at: at,
            finished_at: at,
        };
        let key = SecretKey::from_seed([seed; 32]);
        let evidence = Evidence::sign(&report, "http://127.0.0.1:7070", "r", &key).unwrap();
        let file = dir.join(format!("evidence-{seed}.json"));
        std::fs::write(&file, evidence.to_json().unwrap()).unwrap();
        file
    }

    #[test]
    fn verify_with_the_signers_secret_key_says_it_is_a_secret_key() {
        let dir = tempfile::tempdir().unwrap();
        // Read as a public key, a seed is either no curve point or another
        // point than the signer's: seeds of both kinds.
        let mut kinds = Vec::new();
        for seed in 1..=8u8 {
            let file = signed_evidence(dir.path(), seed);
            let secret = dir.path().join(format!("evidence-{seed}.key"));
            std::fs::write(&secret, SecretKey::from_seed([seed; 32]).to_hex()).unwrap();
            let kind = match PublicKey::from_file(&secret) {
                Err(EvidenceError::NotAPublicKey { .. }) => "no public key",
                Ok(_) => "another public key",
                Err(e) => panic!("{e}"),
            };
            let e = verify(&file, &secret).unwrap_err();
            assert_eq!(
                (e.code.as_str(), e.exit),
                ("usage", crate::error::EXIT_USAGE),
                "{kind}: {e}"
            );
            assert_eq!(
                e.message,
                format!(
                    "--key {}: this is the signer's secret key, not its public key; give the \
                     public key (the evidence.pub `corral evidence keygen` wrote beside it)",
                    secret.display()
                ),
                "{kind}"
            );
            kinds.push(kind);
        }
        assert!(kinds.contains(&"no public key") && kinds.contains(&"another public key"));
        // Another signer's public key is still the wrong signer.
        let file = signed_evidence(dir.path(), 1);
        let other = dir.path().join("other.pub");
        std::fs::write(&other, SecretKey::from_seed([99; 32]).public().to_hex()).unwrap();
        let e = verify(&file, &other).unwrap_err();
        assert_eq!(e.code, "evidence");
        assert!(e.message.contains("was signed by key"), "{e}");
        // And the right public key verifies.
        let public = dir.path().join("evidence.pub");
        std::fs::write(&public, SecretKey::from_seed([1; 32]).public().to_hex()).unwrap();
        assert_eq!(verify(&file, &public).unwrap(), 0);
    }

    #[test]
    fn keygen_writes_a_pair_that_reads_back_and_never_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        assert_eq!(keygen(&keys).unwrap(), 0);
        let secret = SecretKey::from_file(&keys.join("evidence.key")).unwrap();
        let public = PublicKey::from_file(&keys.join("evidence.pub")).unwrap();
        assert_eq!(secret.public(), public);
        let mode = std::fs::metadata(keys.join("evidence.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = keygen(&keys).unwrap_err();
        assert_eq!(
            e.message,
            format!(
                "{} exists; keygen never replaces a key",
                keys.join("evidence.key").display()
            )
        );
        assert_eq!(
            SecretKey::from_file(&keys.join("evidence.key"))
                .unwrap()
                .public(),
            public
        );
    }

    #[test]
    fn verify_refuses_a_bad_key_file_and_a_missing_evidence_file_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.pub");
        std::fs::write(&bad, "not hex\n").unwrap();
        let e = verify(&dir.path().join("evidence.json"), &bad).unwrap_err();
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
        assert!(e.message.starts_with("--key: key file "), "{e}");
        let key = SecretKey::from_seed([1; 32]);
        let public = dir.path().join("evidence.pub");
        std::fs::write(&public, key.public().to_hex()).unwrap();
        let e = verify(&dir.path().join("evidence.json"), &public).unwrap_err();
        assert_eq!(e.code, "io");
        assert!(!e.to_string().contains('\n'));
    }
}
