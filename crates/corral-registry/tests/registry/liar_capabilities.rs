//! The envelope: "Advertise one honest envelope, unchanging for this
//! revision" — "Runtime rejects a cross-field violation at decode" — and
//! "Optional capabilities: absent versus wrong": "the runtime fails closed
//! on a missing member rather than substituting a permissive one".
//!
//! The absent-member tests use a liar whose inner provider (the memory
//! oracle) could serve the member, but whose advertised envelope lacks it:
//! the runtime must refuse from the envelope, typed, and the liar's ledger
//! proves the member was never called.

use crate::liar;
use corral_contract::{
    ActiveWriteBatch, ActiveWriteFile, ActiveWriteRequest, Arguments, CapabilityDeclaration,
    CapabilityField, CloneSnapshotRequest, ConflictState, Environment, Executable, FileContent,
    FileMode, InstanceState, ListDirRequest, ListProjectDirRequest, MaxEntries, MaximumBytes,
    OpenProcessRequest, Operation, ReadFileOutcome, ReadFileRequest, ReadFilesMember,
    ReadFilesRequest, Requirement, RetentionMode, SandboxError, SandboxInstance,
    SandboxProcessRequest, SandboxProvider, SandboxProviderCapabilities, SnapshotCustody,
    SnapshotId, SnapshotRef, SnapshotRequest,
};
use corral_registry::envelopes;
use liar::Liar;
use liar::fixtures::{
    LiarRuntime, MOUNT, active, adapter, assert_protocol_invalid, execute_request, now, path,
    refused, runtime,
};
use liar::flows::{active_with_files, fork_session, in_a_day};

/// The memory envelope with `narrow` applied, validated.
fn narrowed(narrow: impl FnOnce(&mut CapabilityDeclaration)) -> SandboxProviderCapabilities {
    let mut declaration = envelopes::memory().into_declaration();
    narrow(&mut declaration);
    SandboxProviderCapabilities::new(declaration).expect("a narrowed envelope is still valid")
}

/// A runtime around a liar advertising `envelope` over the full memory
/// oracle.
fn underclaiming(envelope: SandboxProviderCapabilities) -> LiarRuntime {
    runtime(Liar::advertising(adapter(), envelope))
}

/// Asserts the runtime refused `operation` as the absent member does, and
/// never called the provider's member; `case` names the table row.
#[track_caller]
fn refused_as_absent(
    case: &str,
    runtime: &LiarRuntime,
    error: &SandboxError,
    operation: Operation,
) {
    assert_eq!(
        Some(error),
        operation.absent_refusal().as_ref(),
        "{case}: runtime said: {error}"
    );
    assert_eq!(
        runtime.provider().ledger().calls(operation),
        0,
        "{case}: the provider was called"
    );
}

/// "`true` with `snapshots: false` is refused by the envelope filter: a
/// clone source is a snapshot you produced" — at decode. A liar's envelope
/// that claims it, sent in its wire form, never becomes an envelope, so no
/// runtime can be built around it.
#[test]
fn capabilities_rejects_snapshot_clone_without_snapshots_at_decode() {
    let mut wire = serde_json::to_value(envelopes::memory()).expect("renders");
    wire["snapshots"] = false.into();
    wire["snapshot_clone"] = true.into();
    wire["retention_modes"] = serde_json::json!(["ephemeral_zdr"]);
    wire["snapshot_custody"] = serde_json::json!(SnapshotCustody::Runner);
    let refusal = serde_json::from_value::<SandboxProviderCapabilities>(wire.clone())
        .expect_err("a cross-field violation decodes");
    assert!(
        refusal
            .to_string()
            .starts_with("snapshot_clone: is true but snapshots is false"),
        "{refusal}"
    );
    // The same declaration built in memory is refused the same way.
    let declaration: CapabilityDeclaration = serde_json::from_value(wire).expect("the raw record");
    let invalid = SandboxProviderCapabilities::new(declaration).expect_err("refused in memory");
    assert_eq!(invalid.to_string(), refusal.to_string());
}

/// "one honest envelope, unchanging for this revision": a provider whose
/// envelope changes after the runtime decoded it is refused at its next
/// call, naming the field that moved and both values.
#[tokio::test]
async fn capabilities_rejects_an_envelope_that_changes() {
    let runtime = runtime(liar::fixtures::memory_liar());
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    runtime
        .provider()
        .readvertise(narrowed(|d| d.list_dir = false));

    let error = refused(
        runtime
            .execute(execute_request(&instance, &["true"], 16))
            .await,
    );

    assert_protocol_invalid(&error, Operation::Capabilities, "list_dir", "true", "false");
    assert_eq!(runtime.provider().ledger().calls(Operation::Execute), 0);
}

/// One optional member the liar's envelope leaves out although its inner
/// provider could serve it.
struct AbsentMember {
    member: &'static str,
    narrow: fn(&mut CapabilityDeclaration),
    operation: Operation,
    refusal: SandboxError,
}

/// Asks `runtime` for `operation` on `instance` with an ordinary request;
/// returns the refusal.
async fn refusal_of(
    runtime: &LiarRuntime,
    instance: SandboxInstance,
    operation: Operation,
) -> SandboxError {
    let instance_id = instance.instance_id;
    match operation {
        Operation::ListDir => refused(
            runtime
                .list_dir(ListDirRequest {
                    instance_id,
                    root: path(MOUNT),
                    max_entries: MaxEntries::new(10).expect("literal"),
                })
                .await,
        ),
        Operation::ListProjectDir => refused(
            runtime
                .list_project_dir(ListProjectDirRequest {
                    instance_id,
                    root: path(MOUNT),
                    max_entries: MaxEntries::new(10).expect("literal"),
                })
                .await,
        ),
        Operation::OpenProcess => refused(
            runtime
                .open_process(OpenProcessRequest {
                    instance_id,
                    process: SandboxProcessRequest {
                        executable: Executable::new("cat").expect("literal"),
                        arguments: Arguments::default(),
                        working_directory: None,
                        environment: Environment::new(),
                    },
                })
                .await,
        ),
        Operation::BeginActiveWrite => {
            let batch = ActiveWriteBatch::new(vec![ActiveWriteFile {
                path: path("/workspace/app/memory.md"),
                content: FileContent::new(b"note".to_vec()).expect("small"),
                mode: FileMode::default(),
            }])
            .expect("one file");
            refused(
                runtime
                    .begin_active_write(ActiveWriteRequest { instance_id, batch })
                    .await,
            )
        }
        other => panic!("no absent-member request for {other}"),
    }
}

/// "`list_dir: false`, no `listDir` | `SandboxLifecycleConflict
/// {list_dir_unsupported}` at call time"; "`listProjectDir` | same typed
/// refusal; Project capture does not run"; "`openProcess` | ACP harnesses
/// cannot run on your provider"; `beginActiveWrite` "… or a provider without
/// `active_mount_write`".
#[tokio::test]
async fn each_absent_member_is_refused_without_calling_the_provider() {
    let unsupported = |operation, actual| {
        SandboxError::lifecycle_conflict(operation, &[InstanceState::Active], actual)
    };
    let cases = [
        AbsentMember {
            member: "listDir",
            narrow: |d| d.list_dir = false,
            operation: Operation::ListDir,
            refusal: unsupported(Operation::ListDir, ConflictState::ListDirUnsupported),
        },
        AbsentMember {
            member: "listProjectDir",
            narrow: |d| d.list_project_dir = false,
            operation: Operation::ListProjectDir,
            refusal: unsupported(
                Operation::ListProjectDir,
                ConflictState::ListProjectDirUnsupported,
            ),
        },
        AbsentMember {
            member: "openProcess",
            narrow: |d| d.open_process = false,
            operation: Operation::OpenProcess,
            refusal: unsupported(
                Operation::OpenProcess,
                ConflictState::OpenProcessUnsupported,
            ),
        },
        AbsentMember {
            member: "activeMountWrite",
            narrow: |d| d.active_mount_write = false,
            operation: Operation::BeginActiveWrite,
            refusal: SandboxError::SandboxCapabilityUnavailable {
                requirement: Requirement::ActiveMountWrite,
                capability: Some(CapabilityField::ActiveMountWrite),
            },
        },
    ];
    for case in cases {
        let runtime = underclaiming(narrowed(case.narrow));
        let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
        let error = refusal_of(&runtime, instance, case.operation).await;
        assert_eq!(error, case.refusal, "{}", case.member);
        refused_as_absent(case.member, &runtime, &error, case.operation);
    }
}

/// "Physically contained reads | `readFile` fails closed on
/// `physically_contained_file_read`. Nothing moves out of the sandbox
/// through the trusted port".
#[tokio::test]
async fn uncontained_read_file_fails_closed_without_calling_the_provider() {
    let runtime = underclaiming(narrowed(|d| {
        d.physically_contained_file_read = false;
        d.read_files = false;
    }));
    let (_, instance) = active_with_files(
        &runtime,
        RetentionMode::EphemeralZdr,
        &[("/mnt/session/outputs/a.txt", b"abc")],
    )
    .await;
    let error = refused(
        runtime
            .read_file(
                ReadFileRequest::new(
                    instance.instance_id,
                    path("/mnt/session/outputs/a.txt"),
                    path("/mnt/session/outputs"),
                    MaximumBytes::new(16).expect("literal"),
                )
                .expect("under the root"),
            )
            .await,
    );
    assert_eq!(
        error,
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
    assert_eq!(runtime.provider().ledger().calls(Operation::ReadFile), 0);
}

/// "`readFiles` | the Runtime falls back to sequential `readFile` per
/// member. Identical results, more round trips".
#[tokio::test]
async fn absent_read_files_falls_back_to_read_file_with_identical_results() {
    let files: [(&str, &[u8]); 2] = [
        ("/mnt/session/outputs/a.txt", b"abc"),
        ("/mnt/session/outputs/b.txt", b"de"),
    ];
    let batch = |instance: &SandboxInstance| {
        let member = |at: &str| ReadFilesMember {
            path: path(at),
            maximum_bytes: MaximumBytes::new(3).expect("literal"),
        };
        ReadFilesRequest::new(
            instance.instance_id.clone(),
            path("/mnt/session/outputs"),
            vec![
                member(files[0].0),
                member(files[1].0),
                member("/mnt/session/outputs/missing.txt"),
            ],
        )
        .expect("three distinct members")
    };

    let native = underclaiming(envelopes::memory());
    let (_, instance) = active_with_files(&native, RetentionMode::EphemeralZdr, &files).await;
    let natively = native
        .read_files(batch(&instance))
        .await
        .expect("a native batch");

    let fallback = underclaiming(narrowed(|d| d.read_files = false));
    let (_, instance) = active_with_files(&fallback, RetentionMode::EphemeralZdr, &files).await;
    let sequentially = fallback
        .read_files(batch(&instance))
        .await
        .expect("a sequential batch");

    assert_eq!(sequentially, natively, "identical results");
    assert!(matches!(
        &sequentially.files[2],
        ReadFileOutcome::Missing { .. }
    ));
    let ledger = fallback.provider().ledger();
    assert_eq!(ledger.calls(Operation::ReadFiles), 0);
    assert_eq!(
        ledger.calls(Operation::ReadFile),
        3,
        "one readFile per member"
    );
}

/// "`snapshot_clone` omitted | `false`: a clone attempt fails
/// `SandboxCapabilityUnavailable{requirement: \"snapshot_clone\"}`" — in
/// corral's closed set, `{requirement: snapshots, capability:
/// snapshot_clone}`. "Capture still works".
#[tokio::test]
async fn absent_snapshot_clone_is_refused_without_calling_the_provider() {
    let runtime = underclaiming(narrowed(|d| d.snapshot_clone = false));
    let (_, instance) = active(&runtime, RetentionMode::Durable).await;
    let source = runtime
        .snapshot(SnapshotRequest {
            instance_id: instance.instance_id,
            expires_at: in_a_day(),
        })
        .await
        .expect("capture still works")
        .value;
    let error = refused(
        runtime
            .clone_snapshot(CloneSnapshotRequest {
                source,
                target_session_id: fork_session(),
            })
            .await,
    );
    assert_eq!(
        error,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        }
    );
    assert_eq!(
        runtime.provider().ledger().calls(Operation::CloneSnapshot),
        0
    );
}

/// "`snapshots: false` | … a clone attempt fails
/// `SandboxCapabilityUnavailable{requirement: \"snapshots\"}`".
#[tokio::test]
async fn absent_snapshots_refuses_clone_without_calling_the_provider() {
    let runtime = underclaiming(narrowed(|d| {
        d.snapshots = false;
        d.snapshot_clone = false;
        d.retention_modes = vec![RetentionMode::EphemeralZdr];
        d.snapshot_custody = SnapshotCustody::Runner;
    }));
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    // A snapshot this provider could never have produced.
    let source = SnapshotRef::for_instance(
        SnapshotId::new("elsewhere").expect("literal"),
        &SnapshotRequest {
            instance_id: instance.instance_id.clone(),
            expires_at: in_a_day(),
        },
        &instance,
        now(),
    );
    let error = refused(
        runtime
            .clone_snapshot(CloneSnapshotRequest {
                source,
                target_session_id: fork_session(),
            })
            .await,
    );
    assert_eq!(
        error,
        SandboxError::capability_unavailable(Requirement::Snapshots)
    );
    assert_eq!(
        runtime.provider().ledger().calls(Operation::CloneSnapshot),
        0
    );
}
