//! Self-serve conformance over the wire: the real binary serves the memory
//! backend; `corral conformance --provider … --token-file … --sign …`
//! runs the nine cases against it and writes signed evidence; `corral
//! evidence verify` accepts it and prints what it proves, and refuses a
//! tampered copy, another key, and a refused token, each in one line.

use std::path::Path;
use std::process::{Command, Output};

use crate::serve_support;
use serve_support::Served;

const TOKEN: &str = "conformance-wire-token-0123456789";

fn corral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A memory backend served on loopback with [`TOKEN`], its token file, and
/// the temporary directory both live in.
fn served_memory() -> (tempfile::TempDir, std::path::PathBuf, Served) {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let server = Served::memory(&token_file);
    (dir, token_file, server)
}

#[test]
fn signed_evidence_from_a_served_provider_verifies_and_a_tampered_copy_does_not() {
    let (dir, token_file, server) = served_memory();
    let keys = dir.path().join("keys");
    let keygen = corral(&["evidence", "keygen", path(&keys)]);
    assert_eq!(keygen.status.code(), Some(0), "{}", text(&keygen.stderr));
    let secret = keys.join("evidence.key");
    let public = keys.join("evidence.pub");
    let evidence = dir.path().join("evidence.json");

    // The memory backend's curl answers for destinations a policy admits
    // and fails for the others; these names are never resolved anywhere.
    let run = corral(&[
        "conformance",
        "--provider",
        &server.endpoint,
        "--token-file",
        path(&token_file),
        "--egress-allowed",
        "api.example.com:443",
        "--egress-denied",
        "blocked.example.net:443",
        "--sign",
        path(&secret),
        "--json",
        path(&evidence),
    ]);
    let table = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{table}{}", text(&run.stderr));
    assert!(table.contains("9 passed, 0 failed, 0 skipped"), "{table}");

    let verify = corral(&[
        "evidence",
        "verify",
        path(&evidence),
        "--key",
        path(&public),
    ]);
    let proven = text(&verify.stdout);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    assert!(proven.contains("signature valid"), "{proven}");
    assert!(proven.contains(&server.endpoint), "{proven}");
    assert!(proven.contains("9 passed, 0 failed, 0 skipped"), "{proven}");
    assert!(
        proven.contains("ZDR snapshots are forbidden and release destroys all state"),
        "{proven}"
    );

    // One case outcome changed: refused, exit 1, one line.
    let original = std::fs::read_to_string(&evidence).unwrap();
    let tampered_text = original.replacen("\"passed\"", "\"failed\"", 1);
    assert_ne!(tampered_text, original);
    let tampered = dir.path().join("tampered.json");
    std::fs::write(&tampered, tampered_text).unwrap();
    let refused = corral(&[
        "evidence",
        "verify",
        path(&tampered),
        "--key",
        path(&public),
    ]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(refused.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("corral: error: [evidence] ")
            && stderr.contains("the signature does not match the evidence"),
        "{stderr}"
    );

    // Another key: refused naming both keys.
    let other = dir.path().join("other");
    assert_eq!(
        corral(&["evidence", "keygen", path(&other)]).status.code(),
        Some(0)
    );
    let wrong = corral(&[
        "evidence",
        "verify",
        path(&evidence),
        "--key",
        path(&other.join("evidence.pub")),
    ]);
    let stderr = text(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("was signed by key"), "{stderr}");
}

#[test]
fn a_refused_token_and_bad_flags_are_one_line_errors() {
    let (dir, token_file, server) = served_memory();

    let wrong_token = dir.path().join("wrong");
    std::fs::write(&wrong_token, "a-wrong-token-0123456789\n").unwrap();
    let out = corral(&[
        "conformance",
        "--provider",
        &server.endpoint,
        "--token-file",
        path(&wrong_token),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("corral: error: [auth] "), "{stderr}");

    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let out = corral(&[
        "conformance",
        "--provider",
        &server.endpoint,
        "--token-file",
        path(&empty),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "corral: error: [usage] --token-file {} is empty\n",
            empty.display()
        )
    );

    let out = corral(&[
        "conformance",
        "--backend",
        "memory",
        "--token-file",
        path(&token_file),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "corral: error: [usage] --token-file goes with --provider http://HOST:PORT\n"
    );

    // The egress destinations: both or neither, and only for a target
    // whose allowlist case probes what a caller names.
    for (args, line) in [
        (
            &[
                "--backend",
                "memory",
                "--egress-allowed",
                "a.test:80",
                "--egress-denied",
                "b.test:80",
            ][..],
            "corral: error: [usage] --egress-allowed and --egress-denied name the allowlist \
             case's destinations for --backend linux and --provider; the memory target probes \
             no destination a caller names\n",
        ),
        (
            &["--backend", "linux", "--egress-allowed", "a.test:80"][..],
            "corral: error: [usage] --egress-allowed and --egress-denied go together: name both \
             destinations or neither\n",
        ),
        (
            &[
                "--backend",
                "linux",
                "--egress-allowed",
                "nope",
                "--egress-denied",
                "b.test:80",
            ][..],
            "corral: error: [usage] --egress-allowed \"nope\": ",
        ),
    ] {
        let mut full = vec!["conformance"];
        full.extend_from_slice(args);
        let out = corral(&full);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(line), "{args:?}: {stderr}");
    }

    let out = corral(&[
        "conformance",
        "--provider",
        &server.endpoint,
        "--backend",
        "memory",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--provider") && stderr.contains("--backend"),
        "{stderr}"
    );
}

/// A provider run without `--egress-allowed`/`--egress-denied`: the two
/// egress cases are recorded skips saying what to give, the run succeeds
/// on what it could observe, and no case fails for want of a fixture.
#[test]
fn without_egress_destinations_the_egress_cases_are_skips_naming_the_flags() {
    let (_dir, token_file, server) = served_memory();
    let run = corral(&[
        "conformance",
        "--provider",
        &server.endpoint,
        "--token-file",
        path(&token_file),
    ]);
    let table = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{table}{}", text(&run.stderr));
    for case in ["allowlist-egress", "none-egress"] {
        let line = table
            .lines()
            .find(|l| l.starts_with(case))
            .unwrap_or_else(|| panic!("no line for {case}: {table}"));
        assert!(line.contains("skipped"), "{line}");
        assert!(
            line.ends_with(corral_conformance::NO_EGRESS_FIXTURE),
            "{line}"
        );
    }
    assert!(
        table.ends_with("7 passed, 0 failed, 2 skipped\n"),
        "{table}"
    );
}
