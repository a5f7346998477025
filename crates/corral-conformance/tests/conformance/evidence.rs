//! Signed evidence: a signed report verifies with the signer's public key
//! and is refused, in one line, when any byte of what was signed changes,
//! when a case outcome is edited, or when another key checks it.

use corral_conformance::evidence::EVIDENCE_FORMAT;
use corral_conformance::{
    CaseReport, ContractRun, Evidence, EvidenceError, Outcome, PublicKey, Report, RequiredTokens,
    SecretKey,
};
use corral_contract::{ConformanceCase, SandboxProviderCapabilities, Timestamp};

const PROVIDER: &str = "http://127.0.0.1:7070";
const REVISION: &str = "corral-wire/2026-11-29";

fn report() -> Report {
    let envelope = SandboxProviderCapabilities::minimum();
    let tokens = envelope.conformance_tokens();
    let cases = ConformanceCase::ALL
        .iter()
        .map(|&name| {
            let runs = name.runs_with(&tokens);
            CaseReport {
                name,
                detail: RequiredTokens {
                    required: name.required_tokens().to_vec(),
                },
                outcome: if runs {
                    Outcome::Passed
                } else {
                    Outcome::Skipped
                },
                reason: (!runs).then(|| "missing tokens: snapshot".to_string()),
                duration_ms: if runs { 17 } else { 0 },
            }
        })
        .collect();
    Report {
        target: "remote".into(),
        run: ContractRun { envelope, tokens },
        cases,
        corral_version: "0.1.0".into(),
        started_at: Timestamp::parse("2026-11-29T23:00:00.000Z").unwrap(),
        finished_at: Timestamp::parse("2026-11-29T23:00:02.500Z").unwrap(),
    }
}

fn signed() -> (SecretKey, String) {
    let key = SecretKey::from_seed([42; 32]);
    let evidence = Evidence::sign(&report(), PROVIDER, REVISION, &key).unwrap();
    (key, evidence.to_json().unwrap())
}

fn one_line(e: &EvidenceError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text:?} is more than one line");
    text
}

#[test]
fn a_signed_report_verifies_and_says_what_it_proves() {
    let (key, text) = signed();
    let evidence = Evidence::verify(&text, &key.public()).unwrap();
    assert_eq!(evidence.report, report());
    assert_eq!(evidence.provider, PROVIDER);
    assert_eq!(evidence.contract_revision, REVISION);
    assert_eq!(evidence.format, EVIDENCE_FORMAT);
    let proven = evidence.proven();
    assert!(proven.contains(&key.public().to_hex()), "{proven}");
    assert!(
        proven.contains(PROVIDER) && proven.contains(REVISION),
        "{proven}"
    );
    let passed = report().count(Outcome::Passed);
    assert!(passed > 0);
    assert!(
        proven.contains("passed   none-egress") || proven.contains("passed  none-egress"),
        "{proven}"
    );
    assert!(proven.contains("outbound traffic is denied"), "{proven}");
    assert!(
        proven.ends_with(&format!("{}\n", report().summary())),
        "{proven}"
    );
}

#[test]
fn re_indenting_the_file_keeps_it_valid() {
    let (key, text) = signed();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = serde_json::to_string(&value).unwrap();
    assert_ne!(compact, text);
    Evidence::verify(&compact, &key.public()).unwrap();
}

// Contract, "Conformance": "A case whose tokens you do not declare is a
// recorded skip, never a silent pass — it shows up in the evidence by
// name." Evidence whose skip was turned into a pass does not verify.
#[test]
fn a_changed_case_outcome_is_refused() {
    let (key, text) = signed();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let skipped = value["report"]["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["outcome"] == "skipped")
        .expect("the minimum envelope skips a case");
    skipped["outcome"] = "passed".into();
    skipped.as_object_mut().unwrap().remove("reason");
    let tampered = serde_json::to_string_pretty(&value).unwrap();
    let e = Evidence::verify(&tampered, &key.public()).unwrap_err();
    assert!(matches!(e, EvidenceError::BadSignature), "{e}");
    assert!(one_line(&e).starts_with("the signature does not match the evidence"));
}

#[test]
fn every_flipped_byte_of_the_report_is_refused() {
    let (key, text) = signed();
    let start = text.find("\"report\"").unwrap();
    let end = text.find("\"signer\"").unwrap();
    // Every third digit or letter of the report (all of them would only
    // repeat the same check): flipping one changes a value, a key or the
    // JSON itself; none of those may verify.
    let mut flipped = 0;
    let candidates = text
        .bytes()
        .enumerate()
        .take(end)
        .skip(start)
        .filter(|(_, b)| b.is_ascii_alphanumeric())
        .step_by(3);
    for (i, b) in candidates {
        let mut bytes = text.clone().into_bytes();
        bytes[i] = if b == b'0' {
            b'1'
        } else if b.is_ascii_digit() {
            b'0'
        } else {
            b ^ 0x20
        };
        let tampered = String::from_utf8(bytes).unwrap();
        let e = Evidence::verify(&tampered, &key.public()).expect_err(&format!(
            "byte {i} ({:?}) flipped still verified",
            b as char
        ));
        one_line(&e);
        flipped += 1;
    }
    assert!(flipped > 100, "only {flipped} bytes tried");
}

#[test]
fn a_changed_provider_is_refused() {
    let (key, text) = signed();
    let tampered = text.replace(PROVIDER, "http://127.0.0.1:7071");
    let e = Evidence::verify(&tampered, &key.public()).unwrap_err();
    assert!(matches!(e, EvidenceError::BadSignature), "{e}");
}

#[test]
fn another_key_is_refused_naming_both_keys() {
    let (key, text) = signed();
    let other = SecretKey::from_seed([7; 32]);
    let e = Evidence::verify(&text, &other.public()).unwrap_err();
    assert!(matches!(e, EvidenceError::WrongSigner { .. }), "{e}");
    let line = one_line(&e);
    assert!(line.contains(&key.public().to_hex()) && line.contains(&other.public().to_hex()));

    // Naming the other key as signer does not help: the signature is not its.
    let relabelled = text.replace(&key.public().to_hex(), &other.public().to_hex());
    let e = Evidence::verify(&relabelled, &other.public()).unwrap_err();
    assert!(matches!(e, EvidenceError::BadSignature), "{e}");
}

#[test]
fn malformed_evidence_is_refused_in_one_line() {
    let (key, text) = signed();
    let public = key.public();
    let e = Evidence::verify("not json", &public).unwrap_err();
    assert!(
        one_line(&e).starts_with("the evidence is malformed: "),
        "{e}"
    );

    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value.as_object_mut().unwrap().remove("signature");
    let e = Evidence::verify(&value.to_string(), &public).unwrap_err();
    assert_eq!(
        one_line(&e),
        "the evidence is malformed: no string field \"signature\""
    );

    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["format"] = "corral-evidence/0".into();
    let e = Evidence::verify(&value.to_string(), &public).unwrap_err();
    assert!(matches!(e, EvidenceError::Format { .. }), "{e}");

    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["signature"] = "abcd".into();
    let e = Evidence::verify(&value.to_string(), &public).unwrap_err();
    assert_eq!(
        one_line(&e),
        "the evidence is malformed: the signature is not 128 hexadecimal digits"
    );

    // An added field is outside what was signed only if it is not in the
    // signed form; it is, so it breaks the signature.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["note"] = "trust me".into();
    let e = Evidence::verify(&value.to_string(), &public).unwrap_err();
    assert!(matches!(e, EvidenceError::BadSignature), "{e}");
}

#[test]
fn key_files_round_trip_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = SecretKey::generate().unwrap();
    let secret = dir.path().join("evidence.key");
    let public = dir.path().join("evidence.pub");
    std::fs::write(&secret, format!("{}\n", key.to_hex())).unwrap();
    std::fs::write(&public, format!("{}\n", key.public().to_hex())).unwrap();
    let read = SecretKey::from_file(&secret).unwrap();
    assert_eq!(read.public(), key.public());
    assert_eq!(PublicKey::from_file(&public).unwrap(), key.public());
    assert_ne!(SecretKey::generate().unwrap().public(), key.public());

    let short = dir.path().join("short");
    std::fs::write(&short, "abcd\n").unwrap();
    let e = PublicKey::from_file(&short).unwrap_err();
    assert_eq!(
        one_line(&e),
        format!(
            "key file {}: expected one line of 64 hexadecimal digits (a 32-byte key)",
            short.display()
        )
    );
    let missing = dir.path().join("missing");
    let e = SecretKey::from_file(&missing).unwrap_err();
    assert!(one_line(&e).starts_with(&format!("key file {}: ", missing.display())));
}
