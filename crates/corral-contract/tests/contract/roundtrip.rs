//! Every wire type round-trips through serde_json: value → JSON → value is
//! the identity and JSON → value → JSON is byte-identical.

use crate::common;
use common::*;
use corral_contract::*;

#[test]
fn scalars_round_trip() {
    round_trip(&Digest::new(D1).unwrap());
    round_trip(&ts("2026-11-29T19:27:50.123Z"));
    round_trip(&Timestamp::MIN);
    round_trip(&Timestamp::MAX);
    round_trip(&EnvKey::new("_A1").unwrap());
    round_trip(
        &Environment::new()
            .with("PATH", "/bin")
            .unwrap()
            .with("A", "")
            .unwrap(),
    );
    round_trip(&Arguments::new(["a", "", "ü"]).unwrap());
    round_trip(&Argv::new(["sh"]).unwrap());
    round_trip(&path("/"));
    round_trip(&path("/a/b c/ü"));
    round_trip(&InstanceId::new("i-~!").unwrap());
    round_trip(&Octets::new(vec![0u8, 255, 10]));
    round_trip(&FileContent::new(b"hello".to_vec()).unwrap());
    round_trip(&HostPort::new("[::1]:8080").unwrap());
    round_trip(&HostPort::new("10.0.0.1:22").unwrap());
    round_trip(&ImageReference::new(format!("localhost:5000/a/b_c-d.e@{D1}")).unwrap());
    round_trip(&LeaseEpoch::MAX);
    round_trip(&FileMode::EXECUTABLE);
    round_trip(&ExitCode::from(255));
}

#[test]
fn byte_identical_timestamps_and_digests() {
    for text in [
        "\"2026-11-29T19:27:50.000Z\"",
        "\"0000-01-01T00:00:00.000Z\"",
        "\"9999-12-31T23:59:59.999Z\"",
        "\"2024-02-29T23:59:59.999Z\"",
        "\"1969-07-20T20:17:40.000Z\"",
    ] {
        let t: Timestamp = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), text);
        let again = Timestamp::from_epoch_millis(t.epoch_millis()).unwrap();
        assert_eq!(again, t);
    }
    let text = format!("\"{D3}\"");
    let d: Digest = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&d).unwrap(), text);
}

#[test]
fn vocabularies_round_trip() {
    for v in Placement::ALL {
        round_trip(v);
    }
    for v in Tier::ALL {
        round_trip(v);
    }
    for v in EnforcementLevel::ALL {
        round_trip(v);
    }
    for v in Requirement::ALL {
        round_trip(v);
    }
    for v in FailureReason::ALL {
        round_trip(v);
    }
    for v in ConflictState::ALL {
        round_trip(v);
    }
    for v in SignalName::ALL {
        round_trip(v);
    }
    for v in ControlSignal::ALL {
        round_trip(v);
    }
    for v in CapabilityToken::ALL {
        round_trip(v);
    }
    for v in JournalState::ALL {
        round_trip(v);
    }
    for op in Operation::all() {
        round_trip(&op);
    }
    assert_eq!(
        serde_json::to_string(&CapabilityToken::NetworkAllowlist).unwrap(),
        "\"network-allowlist\""
    );
}

#[test]
fn envelopes_round_trip() {
    round_trip(&SandboxProviderCapabilities::minimum());
    round_trip(&full_caps());
}

#[test]
fn requests_and_results_round_trip() {
    round_trip(&request());
    round_trip(&instance(InstanceState::Provisioning));
    round_trip(&instance(InstanceState::Active));
    round_trip(&WriteFileRequest {
        instance_id: InstanceId::new("i").unwrap(),
        path: path("/mnt/session/outputs/a"),
        content: FileContent::new(vec![1, 2, 3]).unwrap(),
        mode: FileMode::DEFAULT,
    });
    let mut cmd = command(1024);
    cmd.stdin = Some(StdinBytes::new(b"in".to_vec()).unwrap());
    cmd.working_directory = Some(path("/workspace/app"));
    cmd.environment = Environment::new().with("K", "v").unwrap();
    round_trip(&cmd);
    round_trip(&ExecuteRequest {
        instance_id: InstanceId::new("i").unwrap(),
        command: SandboxCommand::new(
            CommandLine::Shell {
                shell: ShellScript::new("echo hi | wc -c").unwrap(),
            },
            TimeoutSeconds::new(1).unwrap(),
            OutputLimitBytes::new(0).unwrap(),
        ),
    });
    for exit in [
        ExitCause::Code(ExitCode::SUCCESS),
        ExitCause::Signal(SignalName::Sigkill),
        ExitCause::TimedOut,
    ] {
        round_trip(&SandboxExecutionResult {
            exit,
            interval: Interval::new(
                ts("2026-01-01T00:00:00.000Z"),
                ts("2026-01-01T00:00:01.500Z"),
            )
            .unwrap(),
            stdout: StreamCapture {
                content: OutputBytes::new(b"hi\n".to_vec()).unwrap(),
                truncated: false,
            },
            stderr: StreamCapture::default(),
        });
    }
    round_trip(&ProcessExit::Code(ExitCode::from(3)));
    round_trip(&ProcessExit::Signal(SignalName::Sigterm));
    let rr = ReadFileRequest::new(
        InstanceId::new("i").unwrap(),
        path("/workspace/app/a"),
        path("/workspace/app"),
        MaximumBytes::new(10).unwrap(),
    )
    .unwrap();
    round_trip(&rr);
    round_trip(&ReadFileResult {
        content: FileContent::new(b"x".to_vec()).unwrap(),
    });
    let batch = ReadFilesRequest::new(
        InstanceId::new("i").unwrap(),
        path("/w"),
        vec![
            ReadFilesMember {
                path: path("/w/a"),
                maximum_bytes: MaximumBytes::new(5).unwrap(),
            },
            ReadFilesMember {
                path: path("/w/b"),
                maximum_bytes: MaximumBytes::new(7).unwrap(),
            },
        ],
    )
    .unwrap();
    assert_eq!(batch.aggregate_budget_bytes().get(), 12);
    round_trip(&batch);
    round_trip(&ReadFilesResult {
        files: vec![
            ReadFileOutcome::Ok {
                path: path("/w/a"),
                content: FileContent::new(b"abc".to_vec()).unwrap(),
                size: FileSize::of_len(3),
            },
            ReadFileOutcome::Missing { path: path("/w/b") },
            ReadFileOutcome::TooLarge {
                path: path("/w/c"),
                size: FileSize::new(9).unwrap(),
                limit: MaximumBytes::new(7).unwrap(),
            },
            ReadFileOutcome::Refused {
                path: path("/w/d"),
                reason: ReadRefusal::OutsideRoot,
            },
        ],
    });
    round_trip(&ListDirRequest {
        instance_id: InstanceId::new("i").unwrap(),
        root: path("/w"),
        max_entries: MaxEntries::MAX,
    });
    round_trip(&ListDirResult {
        entries: vec![ListDirEntry {
            path: path("/w/a"),
            size: FileSize::new(3).unwrap(),
            sha256: Digest::new(D3).unwrap(),
        }],
    });
    round_trip(&ListProjectDirResult {
        entries: vec![
            ProjectEntry::File {
                path: path("/w/a"),
                size: FileSize::new(1).unwrap(),
                sha256: Digest::new(D1).unwrap(),
            },
            ProjectEntry::Symlink { path: path("/w/l") },
            ProjectEntry::Submodule { path: path("/w/s") },
            ProjectEntry::Device { path: path("/w/d") },
            ProjectEntry::Socket { path: path("/w/k") },
            ProjectEntry::Fifo { path: path("/w/f") },
            ProjectEntry::Other { path: path("/w/o") },
        ],
        complete: true,
    });
    round_trip(&snapshot_request());
    round_trip(&snapshot_ref());
    round_trip(&CloneSnapshotRequest {
        source: snapshot_ref(),
        target_session_id: SessionId::new("ses-2").unwrap(),
    });
    round_trip(&ResumeRequest {
        request: request(),
        snapshot: snapshot_ref(),
    });
    round_trip(&ReleaseRequest {
        instance_id: InstanceId::new("i").unwrap(),
        snapshot_expires_at: Some(ts("2027-01-01T00:00:00.000Z")),
    });
    round_trip(&ReleaseDisposition::Released {
        snapshot: Box::new(snapshot_ref()),
    });
    round_trip(&ReleaseDisposition::Destroyed);
    round_trip(
        &CleanupRequest::new(
            ts("2026-11-29T20:00:00.000Z"),
            ts("2026-11-29T19:00:00.000Z"),
            vec![SnapshotId::new("snap-1").unwrap()],
        )
        .unwrap(),
    );
    round_trip(&CleanupResult {
        instances: vec![InstanceId::new("i").unwrap()],
        snapshots: vec![SnapshotId::new("s").unwrap()],
    });
    round_trip(&OpenProcessRequest {
        instance_id: InstanceId::new("i").unwrap(),
        process: SandboxProcessRequest {
            executable: Executable::new("/usr/bin/agent").unwrap(),
            arguments: Arguments::new(["--acp"]).unwrap(),
            working_directory: Some(path("/workspace/app")),
            environment: Environment::new(),
        },
    });
    round_trip(&SandboxProcessEvidence {
        instance_id: InstanceId::new("i").unwrap(),
        provider: ProviderId::new("memory").unwrap(),
        placement: Placement::Local,
        process_id: ProcessId::new("p-1").unwrap(),
        started_at: ts("2026-11-29T19:31:00.000Z"),
        executable: Executable::new("/usr/bin/agent").unwrap(),
        arguments: Arguments::default(),
        working_directory: None,
    });
    round_trip(&ActiveWriteRequest {
        instance_id: InstanceId::new("i").unwrap(),
        batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
            path: path("/workspace/app/notes.md"),
            content: FileContent::new(b"# notes".to_vec()).unwrap(),
            mode: FileMode::DEFAULT,
        }])
        .unwrap(),
    });
}

#[test]
fn wire_shapes_are_as_documented() {
    let cmd = serde_json::to_value(command(16)).unwrap();
    assert_eq!(cmd["argv"], serde_json::json!(["echo", "hi"]));
    assert!(cmd.get("shell").is_none());
    let exit = serde_json::to_string(&ExitCause::TimedOut).unwrap();
    assert_eq!(exit, r#"{"timed_out":true}"#);
    let exit = serde_json::to_string(&ExitCause::Code(ExitCode::from(2))).unwrap();
    assert_eq!(exit, r#"{"code":2}"#);
    let d = serde_json::to_string(&ReleaseDisposition::Destroyed).unwrap();
    assert_eq!(d, r#"{"disposition":"destroyed"}"#);
    let n = serde_json::to_string(&NetworkPolicy::None).unwrap();
    assert_eq!(n, r#"{"mode":"none"}"#);
    let o = serde_json::to_string(&Octets::from("hello")).unwrap();
    assert_eq!(o, r#""aGVsbG8=""#);
    let e = serde_json::to_value(SandboxError::lifecycle_conflict(
        Operation::ListDir,
        &[InstanceState::Active],
        ConflictState::ListDirUnsupported,
    ))
    .unwrap();
    assert_eq!(
        e,
        serde_json::json!({
            "error": "SandboxLifecycleConflict",
            "operation": "list_dir",
            "expected": ["active"],
            "actual": "list_dir_unsupported",
        })
    );
}

#[test]
fn errors_round_trip() {
    let all = vec![
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead),
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        },
        SandboxError::SandboxFileTooLarge {
            path: path("/w/a"),
            limit: 10,
            actual: 11,
        },
        SandboxError::SandboxInstanceNotFound {
            instance_id: InstanceId::new("i").unwrap(),
        },
        SandboxError::lifecycle_conflict(
            Operation::OpenProcess,
            &[InstanceState::Active],
            ConflictState::ProcessAlreadyOpen,
        ),
        SandboxError::rollback_timed_out(
            Compensated::Snapshot,
            ProtocolViolation::new("expires_at", "a", "b").into_error(Operation::Snapshot),
        ),
        SandboxError::SandboxOutputLimitExceeded {
            stream: OutputStream::Stderr,
            limit: 5,
        },
        SandboxError::SandboxSnapshotForbidden {
            instance_id: InstanceId::new("i").unwrap(),
            retention: RetentionMode::EphemeralZdr,
        },
        SandboxError::SandboxSnapshotNotFound {
            snapshot_id: SnapshotId::new("s").unwrap(),
        },
        SandboxError::SandboxAdapterUnavailable {
            rejected: vec![AdapterRejection {
                provider: ProviderId::new("docker").unwrap(),
                requirement: Requirement::NetworkPolicy,
            }],
        },
        SandboxError::SandboxAdapterAmbiguous {
            candidates: vec![ProviderId::new("a").unwrap(), ProviderId::new("b").unwrap()],
        },
        ProtocolViolation::new("state", "\"active\"", "\"provisioning\"")
            .into_error(Operation::InstanceIdentity),
    ];
    let kinds: std::collections::BTreeSet<ErrorKind> = all.iter().map(SandboxError::kind).collect();
    assert_eq!(kinds.len(), 11, "every variant is exercised");
    for e in &all {
        round_trip(e);
        let tag = serde_json::to_value(e).unwrap()["error"].clone();
        assert_eq!(tag, serde_json::json!(e.kind().as_str()));
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(msg.starts_with(e.kind().as_str()), "{msg}");
    }
}
