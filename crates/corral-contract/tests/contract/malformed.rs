//! Every malformed value is refused, at construction and at decode, with a
//! message naming the field (or type) and the rule.

use crate::common;
use common::*;
use corral_contract::*;

/// Bounds table: "Digests | `^sha256:[0-9a-f]{64}$`".
#[test]
fn bounds_digests_match_the_pattern() {
    let cases = [
        "sha256:zz".to_owned(),
        "sha256:".to_owned(),
        format!("sha256:{}", "A".repeat(64)),
        format!("sha512:{}", "a".repeat(64)),
        format!("sha256:{}", "a".repeat(63)),
        format!("sha256:{}", "a".repeat(65)),
        format!(" sha256:{}", "a".repeat(64)),
        "a".repeat(64),
    ];
    for bad in &cases {
        let err = Digest::new(bad.as_str()).unwrap_err();
        assert_eq!(err.field(), "digest");
        assert!(
            err.to_string()
                .contains("does not match ^sha256:[0-9a-f]{64}$"),
            "{err}"
        );
        refused::<Digest>(&format!("{bad:?}"), &["digest", "^sha256:[0-9a-f]{64}$"]);
    }
    assert_eq!(
        Digest::new("sha256:zz").unwrap_err().to_string(),
        r#"digest: "sha256:zz" does not match ^sha256:[0-9a-f]{64}$"#
    );
    assert!(Digest::from_sha256_hex(&"g".repeat(64)).is_err());
}

/// Bounds table: "Timestamps | canonical UTC ISO-8601 that round-trips
/// byte-identically".
#[test]
fn bounds_timestamps_are_canonical() {
    let cases = [
        ("2026-02-30T00:00:00.000Z", "does not exist"),
        ("2026-11-29T19:27:50Z", "canonical form"),
        ("2026-11-29T19:27:50.000+00:00", "canonical form"),
        ("2026-11-29T19:27:50.0000Z", "canonical form"),
        ("2026-11-29T19:27:50.00Z", "canonical form"),
        ("2026-11-29 19:27:50.000Z", "does not match"),
        ("2026-11-29t19:27:50.000z", "does not match"),
        ("2026-13-01T00:00:00.000Z", "month"),
        ("2026-00-01T00:00:00.000Z", "month"),
        ("2026-01-00T00:00:00.000Z", "does not exist"),
        ("2025-02-29T00:00:00.000Z", "does not exist"),
        ("1900-02-29T00:00:00.000Z", "does not exist"),
        ("2026-04-31T00:00:00.000Z", "does not exist"),
        ("2026-01-01T24:00:00.000Z", "time of day"),
        ("2026-01-01T23:60:00.000Z", "time of day"),
        ("2026-12-31T23:59:60.000Z", "time of day"),
        ("+2026-01-01T00:00:00.000Z", "canonical form"),
        ("-000001-01-01T00:00:00.000Z", "canonical form"),
        ("+010000-01-01T00:00:00.000Z", "canonical form"),
        ("２０２６-01-01T00:00:00.000Z", "canonical form"),
        ("", "canonical form"),
    ];
    for (bad, rule) in cases {
        let err = Timestamp::parse(bad).unwrap_err();
        assert_eq!(err.field(), "timestamp", "{bad}");
        assert!(err.to_string().contains(rule), "{bad}: {err}");
        refused::<Timestamp>(&format!("{bad:?}"), &["timestamp", rule]);
    }
    assert!(Timestamp::parse("2024-02-29T00:00:00.000Z").is_ok());
    assert!(Timestamp::parse("2000-02-29T00:00:00.000Z").is_ok());
}

/// Bounds table: "Environment keys | `^[A-Za-z_][A-Za-z0-9_]*$`".
#[test]
fn bounds_environment_keys_match_the_pattern() {
    for bad in ["1A", "A-B", "", "A B", "A=B", "É", "a.b"] {
        let err = EnvKey::new(bad).unwrap_err();
        assert!(err.to_string().starts_with("env_key: "), "{err}");
        assert!(
            err.to_string().contains("^[A-Za-z_][A-Za-z0-9_]*$"),
            "{err}"
        );
        refused::<Environment>(
            &format!("{{{bad:?}: \"v\"}}"),
            &["environment: ", "^[A-Za-z_][A-Za-z0-9_]*$"],
        );
    }
    for good in ["A", "_", "_a1", "PATH", "a_B_9"] {
        EnvKey::new(good).unwrap();
    }
}

/// Environment values carry no NUL; a key appears once.
#[test]
fn environment_values_without_nul_and_keys_once() {
    refused::<Environment>(r#"{"A": "x\u0000y"}"#, &["environment.A", "contains NUL"]);
    refused::<Environment>(
        r#"{"A": "1", "A": "2"}"#,
        &["environment", "duplicated key"],
    );
    let mut env = Environment::new();
    assert!(env.insert(EnvKey::new("A").unwrap(), "a\0").is_err());
}

/// A refused environment value is never echoed: values carry secrets.
#[test]
fn a_refused_environment_value_is_not_shown() {
    let mut env = Environment::new();
    let err = env
        .insert(EnvKey::new("TOKEN").unwrap(), "hunter2-secret\0")
        .unwrap_err();
    let line = err.to_string();
    assert!(line.contains("environment.TOKEN"), "{line}");
    assert!(!line.contains("hunter2"), "the secret leaked: {line}");
    assert_eq!(err.shown_value(), None);
    let decoded = serde_json::from_str::<Environment>(r#"{"TOKEN": "hunter2\u0000"}"#);
    let line = decoded.unwrap_err().to_string();
    assert!(
        !line.contains("hunter2"),
        "the secret leaked at decode: {line}"
    );
}

/// Bounds table: "Command arguments | ≤ 256".
#[test]
fn bounds_command_arguments_at_most_256() {
    let ok: Vec<String> = (0..256).map(|i| i.to_string()).collect();
    Arguments::new(ok.clone()).unwrap();
    Argv::new(ok.clone()).unwrap();
    let too_many: Vec<String> = (0..257).map(|i| i.to_string()).collect();
    let err = Arguments::new(too_many.clone()).unwrap_err();
    assert_eq!(err.to_string(), "arguments: has more than 256 entries");
    assert!(Argv::new(too_many.clone()).is_err());
    refused::<Arguments>(
        &serde_json::to_string(&too_many).unwrap(),
        &["arguments", "more than 256"],
    );
}

/// Bounds table: "Command arguments | … each ≤ 65,536 bytes".
#[test]
fn bounds_command_argument_at_most_65536_bytes() {
    Arguments::new(["a".repeat(65_536)]).unwrap();
    let big = "a".repeat(65_537);
    let err = Arguments::new(["x".to_owned(), big.clone()]).unwrap_err();
    assert_eq!(err.field(), "arguments[1]");
    assert!(err.to_string().contains("exceeds 65536 bytes"), "{err}");
    assert!(err.to_string().contains("(65537 bytes)"), "{err}");
    refused::<Arguments>(
        &serde_json::to_string(&vec![big.clone()]).unwrap(),
        &["arguments[0]", "exceeds 65536 bytes"],
    );
    assert!(Executable::new(big.clone()).is_err());
    assert!(ShellScript::new(big).is_err());
}

/// Bounds table: "Command arguments | … no NUL".
#[test]
fn bounds_command_arguments_no_nul() {
    let err = Arguments::new(["ok", "a\0b"]).unwrap_err();
    assert_eq!(err.to_string(), r#"arguments[1]: "a\0b" contains NUL"#);
    refused::<Argv>(r#"["sh", "\u0000"]"#, &["argv[1]", "contains NUL"]);
    refused::<Executable>(r#""a\u0000""#, &["executable", "contains NUL"]);
    refused::<Argv>("[]", &["argv", "is empty"]);
    refused::<Executable>(r#""""#, &["executable", "is empty"]);
    refused::<ShellScript>(r#""""#, &["shell", "is empty"]);
}

/// Paths are absolute and normalized.
#[test]
fn paths_are_absolute_and_normalized() {
    let cases = [
        ("relative", "not absolute"),
        ("", "not absolute"),
        ("/a/../b", ".. component"),
        ("/a//b", "empty component"),
        ("//", "trailing /"),
        ("/a/", "trailing /"),
        ("/a/./b", ". component"),
        ("/.", ". component"),
        ("/a\0b", "contains NUL"),
    ];
    for (bad, rule) in cases {
        let err = SandboxPath::new(bad).unwrap_err();
        assert_eq!(err.field(), "path");
        assert!(err.to_string().contains(rule), "{bad}: {err}");
        refused::<SandboxPath>(&serde_json::to_string(bad).unwrap(), &["path", rule]);
    }
    let long = format!("/{}", "a".repeat(256));
    assert!(
        SandboxPath::new(long)
            .unwrap_err()
            .to_string()
            .contains("255")
    );
    let deep = "/aaaaaaa".repeat(600);
    assert!(
        SandboxPath::new(deep)
            .unwrap_err()
            .to_string()
            .contains("4096")
    );
}

/// Identifiers: non-empty, at most 256 bytes, printable ASCII.
#[test]
fn ids_are_bounded_and_printable() {
    for bad in ["", " ", "a b", "a\0", "a\n", "é"] {
        let err = InstanceId::new(bad).unwrap_err();
        assert_eq!(err.field(), "instance_id");
        refused::<SessionId>(&serde_json::to_string(bad).unwrap(), &["session_id"]);
    }
    assert!(
        RunId::new("x".repeat(257))
            .unwrap_err()
            .to_string()
            .contains("256 bytes")
    );
    RunId::new("x".repeat(256)).unwrap();
}

/// Bounded integers name their field and bound.
#[test]
fn bounded_integers_name_field_and_bound() {
    refused::<OutputLimitBytes>(
        "16777217",
        &["output_limit_bytes", "exceeds the maximum 16777216"],
    );
    refused::<MaximumBytes>("16777217", &["maximum_bytes", "16777216"]);
    refused::<MaxEntries>("100001", &["max_entries", "100000"]);
    refused::<MaxMounts>("65", &["max_mounts", "64"]);
    refused::<TimeoutSeconds>("0", &["timeout_seconds", "minimum 1"]);
    refused::<ExitCode>("256", &["code", "255"]);
    refused::<ExitCode>("-1", &["code", "negative"]);
    refused::<LeaseEpoch>("9007199254740992", &["lease_epoch", "9007199254740991"]);
    refused::<FileMode>("4095", &["mode", "511"]);
    refused::<OutputLimitBytes>("1.5", &["output_limit_bytes", "not an integer"]);
    OutputLimitBytes::new(16 * 1024 * 1024).unwrap();
}

/// Bounds table: "Any file content | 16 MiB".
#[test]
fn bounds_file_content_at_most_16_mib() {
    FileContent::new(vec![0; 16 * 1024 * 1024]).unwrap();
    let err = FileContent::new(vec![0; 16 * 1024 * 1024 + 1]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("content: of 16777217 bytes exceeds 16777216"),
        "{err}"
    );
    let encoded = format!("\"{}\"", base64_encode(&vec![0; 16 * 1024 * 1024 + 3]));
    refused::<FileContent>(&encoded, &["content", "exceeds 16777216"]);
    refused::<FileContent>(r#""Zg=""#, &["content", "multiple of 4"]);
    refused::<Octets>(r#""Zh==""#, &["base64", "not canonical"]);
}

/// Image references are `name@sha256:…`.
#[test]
fn image_references_are_pinned_by_digest() {
    for bad in [
        "alpine".to_owned(),
        "alpine:3.20".to_owned(),
        format!("Alpine@{D1}"),
        format!("@{D1}"),
        "alpine@sha256:zz".to_owned(),
        format!("a//b@{D1}"),
        format!("a/-b@{D1}"),
        format!("a:bad tag@{D1}"),
    ] {
        let err = ImageReference::new(bad.as_str()).unwrap_err();
        assert_eq!(err.field(), "root_image", "{bad}");
        assert!(err.to_string().contains("name@digest"), "{err}");
    }
    let r = ImageReference::new(format!("ghcr.io:443/org/img:v1.2_rc@{D1}")).unwrap();
    assert_eq!(r.digest().as_str(), D1);
    assert_eq!(r.name(), "ghcr.io:443/org/img:v1.2_rc");
}

/// Allowlist destinations are canonical `host:port`.
#[test]
fn allowlist_destinations_are_canonical() {
    for bad in [
        "example.com",
        "example.com:0",
        "example.com:65536",
        "example.com:080",
        "Example.com:443",
        "*.example.com:443",
        "-a.com:443",
        "1.2.3.999:443",
        "01.2.3.4:443",
        "[::0:1]:443",
        "[::1:443",
        ":443",
    ] {
        assert!(HostPort::new(bad).is_err(), "{bad}");
    }
    refused::<NetworkPolicy>(
        r#"{"mode":"allowlist","destinations":[]}"#,
        &["destinations", "is empty"],
    );
    refused::<NetworkPolicy>(
        r#"{"mode":"allowlist","destinations":["a.io:1","a.io:1"]}"#,
        &["destinations", "twice"],
    );
    refused::<NetworkPolicy>(r#"{"mode":"open"}"#, &["open"]);
}

/// A command has exactly one of `argv` and `shell`.
#[test]
fn command_has_argv_xor_shell() {
    refused::<SandboxCommand>(
        r#"{"argv":["a"],"shell":"b","timeout_seconds":1,"output_limit_bytes":1}"#,
        &["command", "both argv and shell"],
    );
    refused::<SandboxCommand>(
        r#"{"timeout_seconds":1,"output_limit_bytes":1}"#,
        &["command", "neither argv nor shell"],
    );
    refused::<SandboxCommand>(
        r#"{"argv":["a"],"timeout_seconds":1,"output_limit_bytes":16777217}"#,
        &["output_limit_bytes", "16777216"],
    );
    refused::<SandboxCommand>(
        r#"{"argv":["a"],"timeout_seconds":1,"output_limit_bytes":1,"bogus":1}"#,
        &["unknown field", "bogus"],
    );
}

/// `openProcess` requests have no stdin, no timeout, no output limit.
#[test]
fn process_request_has_no_stdin_timeout_or_output_limit() {
    for extra in [
        r#""stdin":"""#,
        r#""timeout_seconds":5"#,
        r#""output_limit_bytes":5"#,
    ] {
        refused::<SandboxProcessRequest>(
            &format!(r#"{{"executable":"/bin/sh",{extra}}}"#),
            &["unknown field"],
        );
    }
    let ok: SandboxProcessRequest = serde_json::from_str(r#"{"executable":"/bin/sh"}"#).unwrap();
    assert!(ok.arguments.is_empty());
}

/// An execute result names exactly one exit cause.
#[test]
fn execution_result_has_exactly_one_exit_cause() {
    let interval = r#""interval":{"started_at":"2026-01-01T00:00:00.000Z","finished_at":"2026-01-01T00:00:01.000Z"}"#;
    let streams =
        r#""stdout":{"content":"","truncated":false},"stderr":{"content":"","truncated":false}"#;
    let with = |exit: &str| format!("{{\"exit\":{exit},{interval},{streams}}}");
    serde_json::from_str::<SandboxExecutionResult>(&with(r#"{"code":0}"#)).unwrap();
    refused::<SandboxExecutionResult>(
        &with(r#"{"code":0,"signal":"SIGKILL"}"#),
        &["exit", "2 causes: code and signal", "exactly one"],
    );
    refused::<SandboxExecutionResult>(
        &with(r#"{"code":1,"timed_out":true}"#),
        &["exit", "code and timed_out"],
    );
    refused::<SandboxExecutionResult>(&with("{}"), &["exit", "no cause"]);
    refused::<SandboxExecutionResult>(
        &with(r#"{"timed_out":false}"#),
        &["exit.timed_out", "is false"],
    );
    refused::<SandboxExecutionResult>(&with(r#"{"code":256}"#), &["code", "255"]);
    refused::<SandboxExecutionResult>(&with(r#"{"signal":"SIGFOO"}"#), &["signal", "SIGFOO"]);
    refused::<ProcessExit>(
        r#"{"code":0,"signal":"SIGTERM"}"#,
        &["exit", "exactly one of code or signal"],
    );
    refused::<ProcessExit>(r#"{}"#, &["exit", "no cause"]);
    refused::<ProcessExit>(r#"{"timed_out":true}"#, &["exit", "only an execute result"]);
}

/// An execute result's interval is monotonic.
#[test]
fn execution_interval_is_monotonic() {
    let err = Interval::new(
        ts("2026-01-01T00:00:01.000Z"),
        ts("2026-01-01T00:00:00.999Z"),
    )
    .unwrap_err();
    assert_eq!(err.field(), "interval.finished_at");
    refused::<Interval>(
        r#"{"started_at":"2026-01-01T00:00:01.000Z","finished_at":"2026-01-01T00:00:00.000Z"}"#,
        &["interval.finished_at", "before started_at", "monotonic"],
    );
    Interval::new(
        ts("2026-01-01T00:00:01.000Z"),
        ts("2026-01-01T00:00:01.000Z"),
    )
    .unwrap();
}

/// `cleanup` receives "an `orphaned_before` cutoff no later than `now`".
#[test]
fn cleanup_orphaned_before_not_after_now() {
    let err = CleanupRequest::new(
        ts("2026-01-01T00:00:00.000Z"),
        ts("2026-01-01T00:00:00.001Z"),
        vec![],
    )
    .unwrap_err();
    assert_eq!(err.field(), "orphaned_before");
    refused::<CleanupRequest>(
        r#"{"now":"2026-01-01T00:00:00.000Z","orphaned_before":"2026-01-02T00:00:00.000Z"}"#,
        &["orphaned_before", "later than now"],
    );
}

/// Bounds table: "`cleanup.pinned_snapshots` | ≤ 1,024".
#[test]
fn bounds_cleanup_pinned_snapshots_at_most_1024() {
    let now = ts("2026-01-01T00:00:00.000Z");
    let pins = |n: usize| {
        (0..n)
            .map(|i| SnapshotId::new(format!("s{i}")).unwrap())
            .collect::<Vec<_>>()
    };
    CleanupRequest::new(now, now, pins(1024)).unwrap();
    let err = CleanupRequest::new(now, now, pins(1025)).unwrap_err();
    assert_eq!(err.field(), "pinned_snapshots");
    assert!(err.to_string().contains("exceeds 1024"), "{err}");
    let json = serde_json::json!({
        "now": now, "orphaned_before": now, "pinned_snapshots": pins(1025),
    });
    refused::<CleanupRequest>(&json.to_string(), &["pinned_snapshots", "1024"]);
    let twice = vec![SnapshotId::new("s").unwrap(), SnapshotId::new("s").unwrap()];
    assert!(CleanupRequest::new(now, now, twice).is_err());
}

/// Bounds table: "`readFiles` files per request | ≤ 1,024" and "aggregate
/// output | ≤ 128 MiB, and exactly the overflow-safe sum of the members".
#[test]
fn bounds_read_files_count_and_aggregate() {
    let id = InstanceId::new("i").unwrap();
    let member = |i: usize, max: u64| ReadFilesMember {
        path: path(&format!("/w/f{i}")),
        maximum_bytes: MaximumBytes::new(max).unwrap(),
    };
    ReadFilesRequest::new(
        id.clone(),
        path("/w"),
        (0..1024).map(|i| member(i, 1)).collect(),
    )
    .unwrap();
    let err = ReadFilesRequest::new(
        id.clone(),
        path("/w"),
        (0..1025).map(|i| member(i, 1)).collect(),
    )
    .unwrap_err();
    assert_eq!(err.field(), "files");
    // 9 × 16 MiB = 144 MiB > 128 MiB.
    let err = ReadFilesRequest::new(
        id.clone(),
        path("/w"),
        (0..9).map(|i| member(i, 16 * 1024 * 1024)).collect(),
    )
    .unwrap_err();
    assert_eq!(err.field(), "aggregate_budget_bytes");
    refused::<ReadFilesRequest>(
        r#"{"instance_id":"i","allowed_root":"/w","files":[{"path":"/w/a","maximum_bytes":5}],"aggregate_budget_bytes":6}"#,
        &["aggregate_budget_bytes", "exactly the sum", "(5)"],
    );
    refused::<ReadFilesRequest>(
        r#"{"instance_id":"i","allowed_root":"/w","files":[{"path":"/x/a","maximum_bytes":5}],"aggregate_budget_bytes":5}"#,
        &["files[0].path", "not under allowed_root /w"],
    );
    refused::<ReadFileRequest>(
        r#"{"instance_id":"i","path":"/wx","allowed_root":"/w","maximum_bytes":5}"#,
        &["path", "not under allowed_root"],
    );
}

/// Bounds table: "Mounts per instance | ≤ 64".
#[test]
fn bounds_mounts_at_most_64() {
    let mount = |i: usize| MountSpec {
        path: path(&format!("/m{i}")),
        access: MountAccess::ReadOnly,
    };
    Mounts::new((0..64).map(mount).collect()).unwrap();
    let err = Mounts::new((0..65).map(mount).collect()).unwrap_err();
    assert!(err.to_string().contains("exceeds 64"), "{err}");
}

/// Vocabularies are closed: unknown strings are refused naming the field and
/// the allowed values.
#[test]
fn vocabularies_are_closed() {
    refused::<Placement>(r#""cloud""#, &["placement", "hosted, self_hosted, local"]);
    refused::<RetentionMode>(
        r#""forever""#,
        &["retention_mode", "ephemeral_zdr, durable"],
    );
    refused::<EgressCertification>(r#""trust_me""#, &["egress_certification"]);
    refused::<Requirement>(r#""snapshot_clone""#, &["requirement"]);
    refused::<Operation>(r#""execute_rollback""#, &["operation", "_rollback"]);
    refused::<SandboxError>(r#"{"error":"SandboxOops"}"#, &["SandboxOops"]);
}

/// An active-write batch: no duplicate path, no ancestor conflict, bounded.
#[test]
fn active_write_batch_rules() {
    let file = |p: &str| ActiveWriteFile {
        path: path(p),
        content: FileContent::new(b"x".to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    };
    assert!(ActiveWriteBatch::new(vec![]).is_err());
    let err = ActiveWriteBatch::new(vec![file("/w/a"), file("/w/a")]).unwrap_err();
    assert!(err.to_string().contains("written twice"), "{err}");
    let err = ActiveWriteBatch::new(vec![file("/w/a"), file("/w/a/b")]).unwrap_err();
    assert_eq!(err.field(), "files[1].path");
    assert!(err.to_string().contains("ancestor"), "{err}");
    ActiveWriteBatch::new(vec![file("/w/a"), file("/w/ab")]).unwrap();
    let json = r#"{"files":[{"path":"/w/a","content":"eA=="},{"path":"/w/a","content":"eA=="}]}"#;
    refused::<ActiveWriteBatch>(json, &["files[1].path", "twice"]);
}

/// Unknown fields are refused everywhere, tagged unions included.
#[test]
fn unknown_fields_are_refused() {
    refused::<NetworkPolicy>(
        r#"{"mode":"none","destinations":["a.io:1"]}"#,
        &["network.destinations", "mode is none"],
    );
    refused::<NetworkPolicy>(
        r#"{"mode":"allowlist"}"#,
        &["network.destinations", "missing"],
    );
    refused::<NetworkPolicy>(r#"{"mode":"none","x":1}"#, &["unknown field"]);
    refused::<SandboxError>(
        r#"{"error":"SandboxInstanceNotFound","instance_id":"i","hint":"x"}"#,
        &["unknown field", "hint"],
    );
    refused::<ReadFileOutcome>(
        r#"{"status":"missing","path":"/a","size":1}"#,
        &["unknown field", "size"],
    );
    refused::<ReleaseDisposition>(r#"{"disposition":"destroyed","x":1}"#, &["unknown field"]);
    refused::<ReleaseDisposition>(r#"{"disposition":"released"}"#, &["snapshot", "missing"]);
    refused::<SandboxInstance>(r#"{"instance_id":"i"}"#, &["missing field"]);
}
