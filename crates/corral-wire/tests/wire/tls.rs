//! The TLS material a server and a client load, refused as it is loaded:
//! every way a certificate, a key or a CA file can be unusable is one
//! error naming the file (and, for a pair, both files).

use std::path::{Path, PathBuf};

use corral_testkit::tls::TestPki;
use corral_wire::tls::{PemKind, PemProblem};
use corral_wire::{ServerTls, ServerTlsError, Trust, TrustError};

/// A test PKI in `dir`, and files that are not what their name says.
struct Files {
    pki: TestPki,
    missing: PathBuf,
    garbage: PathBuf,
    bad_base64: PathBuf,
    unterminated: PathBuf,
    not_der: PathBuf,
}

fn files(dir: &Path) -> Files {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Files {
        pki: TestPki::create(dir).unwrap(),
        missing: dir.join("no-such.pem"),
        garbage: write("garbage.pem", "this is not PEM at all\n"),
        bad_base64: write(
            "bad-base64.pem",
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        ),
        unterminated: write("unterminated.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n"),
        not_der: write(
            "not-der.pem",
            "-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n",
        ),
    }
}

type Check = fn(&ServerTlsError) -> bool;

/// Attack or mistake → refusal, for `ServerTls::from_pem_files(cert, key)`.
#[test]
fn unusable_certificates_and_keys_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let pki = &f.pki;
    let unreadable = |kind: PemKind| -> Check {
        match kind {
            PemKind::Certificate => {
                |e| matches!(e, ServerTlsError::File(PemProblem::Unreadable { file, .. }) if file.kind == PemKind::Certificate)
            }
            _ => {
                |e| matches!(e, ServerTlsError::File(PemProblem::Unreadable { file, .. }) if file.kind == PemKind::Key)
            }
        }
    };
    let missing: Check = |e| matches!(e, ServerTlsError::File(PemProblem::Missing { .. }));
    let malformed: Check = |e| matches!(e, ServerTlsError::File(PemProblem::Malformed { .. }));
    let mismatch: Check = |e| matches!(e, ServerTlsError::Mismatch { .. });
    let refused: Check = |e| matches!(e, ServerTlsError::Refused { .. });
    let table: Vec<(&str, &Path, &Path, Check, &Path)> = vec![
        (
            "a certificate file that is not there",
            &f.missing,
            &pki.key,
            unreadable(PemKind::Certificate),
            &f.missing,
        ),
        (
            "a key file that is not there",
            &pki.cert,
            &f.missing,
            unreadable(PemKind::Key),
            &f.missing,
        ),
        (
            "a directory as the certificate",
            dir.path(),
            &pki.key,
            unreadable(PemKind::Certificate),
            dir.path(),
        ),
        (
            "garbage as the certificate",
            &f.garbage,
            &pki.key,
            missing,
            &f.garbage,
        ),
        (
            "garbage as the key",
            &pki.cert,
            &f.garbage,
            missing,
            &f.garbage,
        ),
        (
            "a key file given as the certificate",
            &pki.key,
            &pki.key,
            missing,
            &pki.key,
        ),
        (
            "a certificate given as the key",
            &pki.cert,
            &pki.cert,
            missing,
            &pki.cert,
        ),
        (
            "base64 that does not decode",
            &f.bad_base64,
            &pki.key,
            malformed,
            &f.bad_base64,
        ),
        (
            "a section without its END line",
            &f.unterminated,
            &pki.key,
            malformed,
            &f.unterminated,
        ),
        (
            "a certificate section that is not a certificate",
            &f.not_der,
            &pki.key,
            refused,
            &f.not_der,
        ),
        (
            "a key that is not the certificate's",
            &pki.cert,
            &pki.other_key,
            mismatch,
            &pki.other_key,
        ),
    ];
    for (case, cert, key, is, named) in table {
        let refusal = ServerTls::from_pem_files(cert, key).expect_err(case);
        assert!(is(&refusal), "{case}: {refusal:?}");
        let line = refusal.to_string();
        assert_eq!(line.lines().count(), 1, "{case}: {line}");
        assert!(
            line.contains(&named.display().to_string()),
            "{case}: {line}"
        );
    }
    ServerTls::from_pem_files(&pki.cert, &pki.key).expect("the matching pair is served");
}

/// A CA file is read whole when the client is made: one that is missing
/// or holds no certificate is refused naming `CORRAL_CA_FILE` and the
/// file, never taken as "trust nothing extra".
#[test]
fn an_unusable_ca_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let table: Vec<(&str, &Path)> = vec![
        ("a CA file that is not there", &f.missing),
        ("garbage as the CA file", &f.garbage),
        ("a key as the CA file", &f.pki.key),
        ("base64 that does not decode", &f.bad_base64),
    ];
    for (case, path) in table {
        let refusal = Trust::system_and(Some(path)).expect_err(case);
        assert!(
            matches!(refusal, TrustError::CaFile(_)),
            "{case}: {refusal:?}"
        );
        let line = refusal.to_string();
        assert!(
            line.starts_with("CORRAL_CA_FILE: CA file "),
            "{case}: {line}"
        );
        assert!(line.contains(&path.display().to_string()), "{case}: {line}");
        assert_eq!(line.lines().count(), 1, "{case}: {line}");
    }
    Trust::system_and(Some(&f.pki.ca)).expect("the test CA is trusted");
    Trust::only(&f.pki.ca).expect("the test CA alone");
}
