//! The Runner's checks of returned results: execute, reads, listings,
//! snapshots, clones, resume, release, cleanup and process evidence.

use crate::common;
use common::*;
use corral_contract::*;

fn result(stdout: &[u8], truncated: bool) -> SandboxExecutionResult {
    SandboxExecutionResult {
        exit: ExitCause::Code(ExitCode::SUCCESS),
        interval: Interval::new(
            ts("2026-01-01T00:00:00.000Z"),
            ts("2026-01-01T00:00:00.010Z"),
        )
        .unwrap(),
        stdout: StreamCapture {
            content: OutputBytes::new(stdout.to_vec()).unwrap(),
            truncated,
        },
        stderr: StreamCapture::default(),
    }
}

/// "stdout or stderr over `output_limit_bytes`" is refused.
#[test]
fn execute_output_is_bounded_by_the_commands_limit() {
    result(b"1234", false)
        .validate_against(&command(4))
        .unwrap();
    result(b"1234", true).validate_against(&command(4)).unwrap();
    let v = result(b"12345", false)
        .validate_against(&command(4))
        .unwrap_err();
    assert_eq!(v.field, "stdout.content");
    assert_eq!(v.actual, "5 bytes");
    let v = result(b"12", true)
        .validate_against(&command(4))
        .unwrap_err();
    assert_eq!(v.field, "stdout.truncated");
    let mut r = result(b"", false);
    r.stderr.content = OutputBytes::new(vec![0; 5]).unwrap();
    assert_eq!(
        r.validate_against(&command(4)).unwrap_err().field,
        "stderr.content"
    );
    let err = v.into_error(Operation::Execute);
    assert_eq!(err.kind(), ErrorKind::SandboxProtocolInvalid);
}

/// "content over the caller's `maximum_bytes`" is refused.
#[test]
fn read_file_content_within_maximum_bytes() {
    let req = ReadFileRequest::new(
        InstanceId::new("i").unwrap(),
        path("/w/a"),
        path("/w"),
        MaximumBytes::new(3).unwrap(),
    )
    .unwrap();
    ReadFileResult {
        content: FileContent::new(b"abc".to_vec()).unwrap(),
    }
    .validate_against(&req)
    .unwrap();
    let v = ReadFileResult {
        content: FileContent::new(b"abcd".to_vec()).unwrap(),
    }
    .validate_against(&req)
    .unwrap_err();
    assert_eq!(v.field, "content");
}

fn batch() -> ReadFilesRequest {
    ReadFilesRequest::new(
        InstanceId::new("i").unwrap(),
        path("/w"),
        vec![
            ReadFilesMember {
                path: path("/w/a"),
                maximum_bytes: MaximumBytes::new(4).unwrap(),
            },
            ReadFilesMember {
                path: path("/w/b"),
                maximum_bytes: MaximumBytes::new(4).unwrap(),
            },
        ],
    )
    .unwrap()
}

fn ok(p: &str, content: &[u8]) -> ReadFileOutcome {
    ReadFileOutcome::Ok {
        path: path(p),
        content: FileContent::new(content.to_vec()).unwrap(),
        size: FileSize::of_len(content.len()),
    }
}

/// "out-of-order, short, or over-budget results fail the whole batch".
#[test]
fn read_files_results_are_the_closed_union_in_order_and_in_budget() {
    let good = ReadFilesResult {
        files: vec![
            ok("/w/a", b"1234"),
            ReadFileOutcome::Missing { path: path("/w/b") },
        ],
    };
    good.validate_against(&batch()).unwrap();
    let short = ReadFilesResult {
        files: vec![ok("/w/a", b"1")],
    };
    assert_eq!(short.validate_against(&batch()).unwrap_err().field, "files");
    let swapped = ReadFilesResult {
        files: vec![ok("/w/b", b"1"), ok("/w/a", b"1")],
    };
    assert_eq!(
        swapped.validate_against(&batch()).unwrap_err().field,
        "files[0].path"
    );
    let over = ReadFilesResult {
        files: vec![ok("/w/a", b"12345"), ok("/w/b", b"")],
    };
    assert_eq!(
        over.validate_against(&batch()).unwrap_err().field,
        "files[0].content"
    );
    let lying_size = ReadFilesResult {
        files: vec![
            ReadFileOutcome::Ok {
                path: path("/w/a"),
                content: FileContent::new(b"12".to_vec()).unwrap(),
                size: FileSize::new(3).unwrap(),
            },
            ok("/w/b", b""),
        ],
    };
    assert_eq!(
        lying_size.validate_against(&batch()).unwrap_err().field,
        "files[0].size"
    );
    let small_too_large = ReadFilesResult {
        files: vec![
            ReadFileOutcome::TooLarge {
                path: path("/w/a"),
                size: FileSize::new(4).unwrap(),
                limit: MaximumBytes::new(4).unwrap(),
            },
            ok("/w/b", b""),
        ],
    };
    assert_eq!(
        small_too_large
            .validate_against(&batch())
            .unwrap_err()
            .field,
        "files[0].size"
    );
    let refused = ReadFilesResult {
        files: vec![
            ReadFileOutcome::Refused {
                path: path("/w/a"),
                reason: ReadRefusal::SymlinkLoop,
            },
            ok("/w/b", b"xy"),
        ],
    };
    refused.validate_against(&batch()).unwrap();
}

/// `listDir`: "more entries than `max_entries`" is refused.
#[test]
fn list_dir_results_within_max_entries_and_under_root() {
    let req = ListDirRequest {
        instance_id: InstanceId::new("i").unwrap(),
        root: path("/w"),
        max_entries: MaxEntries::new(2).unwrap(),
    };
    let entry = |p: &str| ListDirEntry {
        path: path(p),
        size: FileSize::new(1).unwrap(),
        sha256: Digest::new(D1).unwrap(),
    };
    ListDirResult {
        entries: vec![entry("/w/a"), entry("/w/b/c")],
    }
    .validate_against(&req)
    .unwrap();
    let three = ListDirResult {
        entries: vec![entry("/w/a"), entry("/w/b"), entry("/w/c")],
    };
    assert_eq!(three.validate_against(&req).unwrap_err().field, "entries");
    let outside = ListDirResult {
        entries: vec![entry("/wx")],
    };
    assert_eq!(
        outside.validate_against(&req).unwrap_err().field,
        "entries[0].path"
    );
    let twice = ListDirResult {
        entries: vec![entry("/w/a"), entry("/w/a")],
    };
    assert_eq!(
        twice.validate_against(&req).unwrap_err().field,
        "entries[1].path"
    );
}

/// `listProjectDir`: "a listing that is not `complete: true`, or over
/// `max_entries`" is refused.
#[test]
fn list_project_dir_must_be_complete() {
    let req = ListProjectDirRequest {
        instance_id: InstanceId::new("i").unwrap(),
        root: path("/w"),
        max_entries: MaxEntries::new(10).unwrap(),
    };
    let entries = vec![ProjectEntry::Symlink { path: path("/w/l") }];
    ListProjectDirResult {
        entries: entries.clone(),
        complete: true,
    }
    .validate_against(&req)
    .unwrap();
    let v = ListProjectDirResult {
        entries,
        complete: false,
    }
    .validate_against(&req)
    .unwrap_err();
    assert_eq!(
        (v.field.as_str(), v.expected.as_str()),
        ("complete", "true")
    );
    refused::<ListProjectDirResult>(
        r#"{"entries":[{"kind":"hardlink","path":"/w/a"}],"complete":true}"#,
        &["hardlink"],
    );
}

/// A `snapshot` ref must agree with its source and carry exactly the
/// requested `expires_at`.
#[test]
fn snapshot_checks() {
    let source = instance(InstanceState::Active);
    assert!(snapshot_mismatches(&snapshot_request(), &source, &snapshot_ref()).is_empty());
    let mut s = snapshot_ref();
    s.expires_at = source.expires_at;
    let found = snapshot_mismatches(&snapshot_request(), &source, &s);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].field, SnapshotField::ExpiresAt);
    let mut s = snapshot_ref();
    s.session_id = SessionId::new("other").unwrap();
    s.profile_digest = Digest::new(D3).unwrap();
    let fields: Vec<_> = snapshot_mismatches(&snapshot_request(), &source, &s)
        .into_iter()
        .map(|m| m.field)
        .collect();
    assert_eq!(
        fields,
        [SnapshotField::SessionId, SnapshotField::ProfileDigest]
    );
}

/// A clone uses a different id, binds the target Session, keeps `expires_at`
/// byte-identical, and has `created_at` in `[source.created_at, expires_at)`.
#[test]
fn clone_checks() {
    let req = CloneSnapshotRequest {
        source: snapshot_ref(),
        target_session_id: SessionId::new("ses-2").unwrap(),
    };
    let good = req.source.cloned(
        SnapshotId::new("snap-2").unwrap(),
        SessionId::new("ses-2").unwrap(),
        ts("2026-11-29T19:30:00.000Z"),
    );
    assert!(clone_mismatches(&req, &good).is_empty());
    type Corrupt = Box<dyn Fn(&mut SnapshotRef)>;
    let cases: Vec<(SnapshotField, Corrupt)> = vec![
        (
            SnapshotField::SnapshotId,
            Box::new(|s| s.snapshot_id = SnapshotId::new("snap-1").unwrap()),
        ),
        (
            SnapshotField::SessionId,
            Box::new(|s| s.session_id = SessionId::new("ses-1").unwrap()),
        ),
        (
            SnapshotField::ExpiresAt,
            Box::new(|s| s.expires_at = ts("2026-12-29T00:00:00.001Z")),
        ),
        (
            SnapshotField::CreatedAt,
            Box::new(|s| s.created_at = ts("2026-11-29T19:29:59.999Z")),
        ),
        (
            SnapshotField::CreatedAt,
            Box::new(|s| s.created_at = ts("2026-12-29T00:00:00.000Z")),
        ),
        (
            SnapshotField::Provider,
            Box::new(|s| s.provider = ProviderId::new("x").unwrap()),
        ),
        (
            SnapshotField::WorkspaceId,
            Box::new(|s| s.workspace_id = WorkspaceId::new("x").unwrap()),
        ),
    ];
    for (field, corrupt) in cases {
        let mut c = good.clone();
        corrupt(&mut c);
        let found = clone_mismatches(&req, &c);
        assert_eq!(found.len(), 1, "{field}: {found:?}");
        assert_eq!(found[0].field, field);
    }
}

/// `resume` refuses "a snapshot/request mismatch on provider, placement,
/// Workspace, Session, or profile".
#[test]
fn resume_checks() {
    let good = ResumeRequest {
        request: request(),
        snapshot: snapshot_ref(),
    };
    assert!(resume_mismatches(&good).is_empty());
    let mut bad = good.clone();
    bad.request.placement = Placement::Hosted;
    bad.request.profile.version = ProfileVersion::new("8").unwrap();
    let fields: Vec<_> = resume_mismatches(&bad)
        .into_iter()
        .map(|m| m.field)
        .collect();
    assert_eq!(
        fields,
        [SnapshotField::Placement, SnapshotField::ProfileVersion]
    );
}

/// "a `released` disposition on a ZDR profile, or `destroyed` on a durable
/// one" is refused.
#[test]
fn release_disposition_matches_retention() {
    let released = ReleaseDisposition::Released {
        snapshot: Box::new(snapshot_ref()),
    };
    released.validate_for(RetentionMode::Durable).unwrap();
    ReleaseDisposition::Destroyed
        .validate_for(RetentionMode::EphemeralZdr)
        .unwrap();
    assert_eq!(
        released
            .validate_for(RetentionMode::EphemeralZdr)
            .unwrap_err()
            .actual,
        "released"
    );
    assert_eq!(
        ReleaseDisposition::Destroyed
            .validate_for(RetentionMode::Durable)
            .unwrap_err()
            .actual,
        "destroyed"
    );
}

/// "a pinned snapshot is exempt from the opportunistic cutoff but never from
/// its own `expires_at`."
#[test]
fn cleanup_pins_never_outlive_their_own_expiry() {
    let pinned = SnapshotId::new("pinned").unwrap();
    let loose = SnapshotId::new("loose").unwrap();
    let req = CleanupRequest::new(
        ts("2026-06-01T00:00:00.000Z"),
        ts("2026-05-01T00:00:00.000Z"),
        vec![pinned.clone()],
    )
    .unwrap();
    let old = ts("2026-04-01T00:00:00.000Z");
    let later = ts("2026-07-01T00:00:00.000Z");
    let past = ts("2026-05-15T00:00:00.000Z");
    assert!(
        !req.sweeps_snapshot(&pinned, old, later),
        "pin survives the cutoff"
    );
    assert!(
        req.sweeps_snapshot(&pinned, old, past),
        "expiry wins over the pin"
    );
    assert!(
        req.sweeps_snapshot(&loose, old, later),
        "unpinned, before the cutoff"
    );
    assert!(!req.sweeps_snapshot(&loose, ts("2026-05-20T00:00:00.000Z"), later));
    assert!(req.sweeps_instance(old, later));
    assert!(req.sweeps_instance(ts("2026-05-20T00:00:00.000Z"), past));
    assert!(!req.sweeps_instance(ts("2026-05-20T00:00:00.000Z"), later));
    refused::<CleanupResult>(r#"{"instances":[],"snapshots":[],"extra":[]}"#, &["extra"]);
    refused::<CleanupResult>(r#"{"instances":[]}"#, &["snapshots"]);
}

/// `openProcess` evidence is checked against the instance, the request and
/// the envelope (`open_process_identity`).
#[test]
fn process_evidence_checks() {
    let inst = instance(InstanceState::Active);
    let req = SandboxProcessRequest {
        executable: Executable::new("/usr/bin/agent").unwrap(),
        arguments: Arguments::new(["--acp"]).unwrap(),
        working_directory: None,
        environment: Environment::new(),
    };
    let evidence = SandboxProcessEvidence {
        instance_id: inst.instance_id.clone(),
        provider: inst.provider.clone(),
        placement: inst.placement,
        process_id: ProcessId::new("p").unwrap(),
        started_at: ts("2026-11-29T19:40:00.000Z"),
        executable: req.executable.clone(),
        arguments: req.arguments.clone(),
        working_directory: None,
    };
    assert!(evidence_mismatches(&req, &inst, &full_caps(), &evidence).is_empty());
    let fields: Vec<_> = evidence_mismatches(
        &req,
        &inst,
        &SandboxProviderCapabilities::minimum(),
        &evidence,
    )
    .into_iter()
    .map(|m| m.field)
    .collect();
    assert_eq!(fields, [EvidenceField::OpenProcessCapability]);
    let mut late = evidence.clone();
    late.started_at = inst.expires_at;
    late.arguments = Arguments::default();
    let found = evidence_mismatches(&req, &inst, &full_caps(), &late);
    let fields: Vec<_> = found.iter().map(|m| m.field).collect();
    assert_eq!(fields, [EvidenceField::StartedAt, EvidenceField::Arguments]);
    assert_eq!(
        found[1]
            .to_violation()
            .into_error(Operation::OpenProcessIdentity)
            .to_string(),
        "SandboxProtocolInvalid: operation open_process_identity: field arguments: expected [\"--acp\"], actual []"
    );
}

/// The rollback bound: a compensation that times out names
/// `<operation>_rollback` and `timed_out`, combined with the original cause.
#[test]
fn rollback_timeout_combines_causes() {
    let original =
        ProtocolViolation::new("expires_at", "\"a\"", "\"b\"").into_error(Operation::Snapshot);
    let err = SandboxError::rollback_timed_out(Compensated::Snapshot, original.clone());
    assert_eq!(
        err.to_string(),
        "SandboxOperationFailed: operation snapshot_rollback: reason timed_out; cause: \
         SandboxProtocolInvalid: operation snapshot: field expires_at: expected \"a\", actual \"b\""
    );
    match err {
        SandboxError::SandboxOperationFailed { cause: Some(c), .. } => assert_eq!(*c, original),
        other => panic!("{other:?}"),
    }
    assert_eq!(bounds::ROLLBACK_BOUND_SECONDS, 30);
    assert_eq!(bounds::PROCESS_WAIT_AFTER_SIGTERM_SECONDS, 5);
}
