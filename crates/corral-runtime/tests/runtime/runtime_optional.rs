//! Optional capabilities, absent versus wrong: "absent is a typed refusal at
//! a known point"; `readFiles` absent falls back to sequential `readFile`
//! with identical results; batches are grouped by root; and "out-of-order,
//! short, or over-budget results fail the **whole batch** as
//! `SandboxProtocolInvalid`".

use crate::common_runtime;
use std::sync::Arc;

use common_runtime::*;
use corral_contract::*;

fn without(change: impl FnOnce(&mut CapabilityDeclaration)) -> SandboxProviderCapabilities {
    let mut declaration = full_declaration();
    change(&mut declaration);
    caps(declaration)
}

fn unsupported(operation: Operation, actual: ConflictState) -> SandboxError {
    SandboxError::lifecycle_conflict(operation, &[InstanceState::Active], actual)
}

/// One optional member the provider does not declare: the operation the
/// caller asks for, and the refusal it gets instead of a provider call.
struct AbsentMember {
    member: &'static str,
    remove: fn(&mut CapabilityDeclaration),
    operation: Operation,
    refusal: SandboxError,
}

fn absent_members() -> Vec<AbsentMember> {
    vec![
        AbsentMember {
            member: "listDir",
            remove: |d| d.list_dir = false,
            operation: Operation::ListDir,
            refusal: unsupported(Operation::ListDir, ConflictState::ListDirUnsupported),
        },
        AbsentMember {
            member: "listProjectDir",
            remove: |d| d.list_project_dir = false,
            operation: Operation::ListProjectDir,
            refusal: unsupported(
                Operation::ListProjectDir,
                ConflictState::ListProjectDirUnsupported,
            ),
        },
        AbsentMember {
            member: "openProcess",
            remove: |d| d.open_process = false,
            operation: Operation::OpenProcess,
            refusal: unsupported(
                Operation::OpenProcess,
                ConflictState::OpenProcessUnsupported,
            ),
        },
        AbsentMember {
            member: "activeMountWrite",
            remove: |d| d.active_mount_write = false,
            operation: Operation::BeginActiveWrite,
            refusal: SandboxError::SandboxCapabilityUnavailable {
                requirement: Requirement::ActiveMountWrite,
                capability: Some(CapabilityField::ActiveMountWrite),
            },
        },
    ]
}

/// "absent is a typed refusal at a known point": each undeclared optional
/// member is refused with its typed error, and the provider is never called.
#[tokio::test]
async fn each_absent_optional_member_is_refused_typed_without_calling_provider() {
    for case in absent_members() {
        let rt = runtime(Fake::new(without(case.remove)));
        let id = active(&rt, zdr_request()).await;
        let err = refusal_of(&rt, id, case.operation, "/workspace/app").await;
        assert_eq!(err, case.refusal, "{}", case.member);
        assert_eq!(
            rt.provider().log.calls(case.operation),
            0,
            "{}: the provider was called",
            case.member
        );
    }
}

/// Stages one file of each outcome kind under `/workspace/app`.
fn stage(fake: &Fake, id: &InstanceId) {
    fake.put(id, "/workspace/app/ok", Entry::File(b"hello".to_vec()));
    fake.put(id, "/workspace/app/big", Entry::File(vec![b'x'; 64]));
    fake.put(id, "/workspace/app/escape", Entry::Escape);
    fake.put(id, "/workspace/app/dir", Entry::Directory);
}

fn every_kind() -> Vec<ReadFilesMember> {
    vec![
        member("/workspace/app/ok", 16),
        member("/workspace/app/missing", 16),
        member("/workspace/app/big", 16),
        member("/workspace/app/escape", 16),
        member("/workspace/app/dir", 16),
    ]
}

#[tokio::test]
async fn read_files_absent_falls_back_to_sequential_read_file_with_identical_results() {
    let native = runtime(Fake::new(full_caps()));
    let native_id = active(&native, zdr_request()).await;
    stage(native.provider(), &native_id);
    let fallback = runtime(Fake::new(without(|d| d.read_files = false)));
    let fallback_id = active(&fallback, zdr_request()).await;
    stage(fallback.provider(), &fallback_id);

    let root = path("/workspace/app");
    let request =
        |id: &InstanceId| ReadFilesRequest::new(id.clone(), root.clone(), every_kind()).unwrap();
    let from_native = native.read_files(request(&native_id)).await.unwrap();
    let from_fallback = fallback.read_files(request(&fallback_id)).await.unwrap();

    assert_eq!(from_fallback, from_native);
    assert!(matches!(from_native.files[0], ReadFileOutcome::Ok { .. }));
    assert!(matches!(
        from_native.files[1],
        ReadFileOutcome::Missing { .. }
    ));
    assert!(matches!(
        from_native.files[2],
        ReadFileOutcome::TooLarge { .. }
    ));
    assert!(matches!(
        from_native.files[3],
        ReadFileOutcome::Refused {
            reason: ReadRefusal::OutsideRoot,
            ..
        }
    ));
    assert!(matches!(
        from_native.files[4],
        ReadFileOutcome::Refused {
            reason: ReadRefusal::NotRegularFile,
            ..
        }
    ));
    assert_eq!(native.provider().log.calls(Operation::ReadFiles), 1);
    assert_eq!(native.provider().log.calls(Operation::ReadFile), 0);
    assert_eq!(fallback.provider().log.calls(Operation::ReadFiles), 0);
    assert_eq!(fallback.provider().log.calls(Operation::ReadFile), 5);
}

#[tokio::test]
async fn read_files_fallback_holds_each_read_file_to_its_maximum_bytes_and_fails_the_batch() {
    let rt = runtime(Fake::new(without(|d| d.read_files = false)));
    let id = active(&rt, zdr_request()).await;
    stage(rt.provider(), &id);
    rt.provider().knobs(|k| {
        k.read_file = Some(Arc::new(|r: &mut ReadFileResult| {
            r.content = FileContent::new(vec![b'y'; 17]).unwrap();
        }))
    });
    let request = ReadFilesRequest::new(id, path("/workspace/app"), every_kind()).unwrap();
    let err = rt.read_files(request).await.unwrap_err();
    protocol_invalid(&err, Operation::ReadFile, "content");
}

#[tokio::test]
async fn read_files_are_grouped_by_allowed_root_three_roots_three_calls_each_with_its_own_budget() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/workspace/app/a", Entry::File(b"app".to_vec()));
    rt.provider()
        .put(&id, "/workspace/data/b", Entry::File(b"data".to_vec()));
    rt.provider()
        .put(&id, "/mnt/session/outputs/c", Entry::File(b"out".to_vec()));
    rt.provider()
        .put(&id, "/workspace/app/d", Entry::File(b"app2".to_vec()));
    let result = rt
        .read_paths(
            id,
            vec![
                member("/workspace/app/a", 10),
                member("/workspace/data/b", 20),
                member("/mnt/session/outputs/c", 30),
                member("/workspace/app/d", 40),
            ],
        )
        .await
        .unwrap();
    let contents: Vec<Vec<u8>> = result
        .files
        .iter()
        .map(|o| match o {
            ReadFileOutcome::Ok { content, .. } => content.to_vec(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        contents,
        vec![
            b"app".to_vec(),
            b"data".to_vec(),
            b"out".to_vec(),
            b"app2".to_vec()
        ]
    );
    let batches = rt.provider().log.read_batches();
    let shape: Vec<(String, u64, usize)> = batches
        .iter()
        .map(|b| {
            (
                b.allowed_root().to_string(),
                b.aggregate_budget_bytes().get(),
                b.files().len(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("/workspace/app".to_owned(), 50, 2),
            ("/workspace/data".to_owned(), 20, 1),
            ("/mnt/session/outputs".to_owned(), 30, 1),
        ]
    );
}

#[tokio::test]
async fn read_paths_without_read_files_group_by_root_and_read_each_member_once() {
    let rt = runtime(Fake::new(without(|d| d.read_files = false)));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/workspace/app/a", Entry::File(b"app".to_vec()));
    rt.provider()
        .put(&id, "/workspace/data/b", Entry::File(b"data".to_vec()));
    let result = rt
        .read_paths(
            id,
            vec![
                member("/workspace/app/a", 10),
                member("/workspace/data/b", 20),
            ],
        )
        .await
        .unwrap();
    assert_eq!(result.files.len(), 2);
    let roots: Vec<String> = rt
        .provider()
        .log
        .reads()
        .iter()
        .map(|r| r.allowed_root().to_string())
        .collect();
    assert_eq!(roots, vec!["/workspace/app", "/workspace/data"]);
    assert_eq!(rt.provider().log.calls(Operation::ReadFiles), 0);
}

#[tokio::test]
async fn read_paths_split_a_group_past_one_requests_bounds_and_never_repeat_a_path_within_a_call() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let mut files: Vec<ReadFilesMember> = (0..1030)
        .map(|i| member(&format!("/workspace/app/f{i}"), 1))
        .collect();
    files.push(member("/workspace/app/f0", 2));
    let result = rt.read_paths(id, files).await.unwrap();
    assert_eq!(result.files.len(), 1031);
    assert_eq!(result.files[1030].path(), &path("/workspace/app/f0"));
    let sizes: Vec<(usize, u64)> = rt
        .provider()
        .log
        .read_batches()
        .iter()
        .map(|b| (b.files().len(), b.aggregate_budget_bytes().get()))
        .collect();
    assert_eq!(sizes, vec![(1024, 1024), (7, 8)]);
}

#[tokio::test]
async fn read_paths_read_a_repeated_path_in_a_separate_call() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/workspace/app/a", Entry::File(b"0123456789".to_vec()));
    let result = rt
        .read_paths(
            id,
            vec![
                member("/workspace/app/a", 4),
                member("/workspace/app/a", 16),
            ],
        )
        .await
        .unwrap();
    assert!(matches!(result.files[0], ReadFileOutcome::TooLarge { .. }));
    assert!(matches!(result.files[1], ReadFileOutcome::Ok { .. }));
    let budgets: Vec<u64> = rt
        .provider()
        .log
        .read_batches()
        .iter()
        .map(|b| b.aggregate_budget_bytes().get())
        .collect();
    assert_eq!(budgets, vec![4, 16]);
}

async fn batch_with(lie: fn(&mut ReadFilesResult)) -> SandboxError {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    stage(rt.provider(), &id);
    rt.provider().knobs(|k| k.read_files = Some(Arc::new(lie)));
    let request = ReadFilesRequest::new(id, path("/workspace/app"), every_kind()).unwrap();
    rt.read_files(request).await.unwrap_err()
}

/// One way a `readFiles` result can be wrong, and the field the runtime
/// names when it refuses it.
struct BatchLie {
    lie: &'static str,
    tell: fn(&mut ReadFilesResult),
    field: &'static str,
    /// The `(expected, actual)` the refusal reports, where the row checks it.
    reported: Option<(&'static str, &'static str)>,
}

/// "out-of-order, short, or over-budget results fail the **whole batch** as
/// `SandboxProtocolInvalid`".
#[tokio::test]
async fn read_files_out_of_order_short_or_over_budget_fails_the_whole_batch() {
    let lies = [
        BatchLie {
            lie: "out of order",
            tell: |r| r.files.swap(0, 1),
            field: "files[0].path",
            reported: Some(("/workspace/app/ok", "/workspace/app/missing")),
        },
        BatchLie {
            lie: "short",
            tell: |r| {
                r.files.pop();
            },
            field: "files",
            reported: Some(("5 outcomes", "4 outcomes")),
        },
        BatchLie {
            lie: "over budget",
            tell: |r| {
                r.files[0] = ReadFileOutcome::Ok {
                    path: path("/workspace/app/ok"),
                    content: FileContent::new(vec![b'z'; 17]).unwrap(),
                    size: FileSize::of_len(17),
                }
            },
            field: "files[0].content",
            reported: None,
        },
    ];
    for case in lies {
        let err = batch_with(case.tell).await;
        let (expected, actual) =
            protocol_invalid_in(case.lie, &err, Operation::ReadFiles, case.field);
        if let Some(reported) = case.reported {
            assert_eq!(
                (expected.as_str(), actual.as_str()),
                reported,
                "{}",
                case.lie
            );
        }
    }
}

#[tokio::test]
async fn list_project_dir_not_marked_complete_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().put(&id, "/workspace/app/link", Entry::Escape);
    rt.provider().knobs(|k| {
        k.project = Some(Arc::new(|r: &mut ListProjectDirResult| {
            r.entries.clear();
            r.complete = false;
        }))
    });
    let err = rt
        .list_project_dir(ListProjectDirRequest {
            instance_id: id,
            root: path("/workspace/app"),
            max_entries: MaxEntries::MAX,
        })
        .await
        .unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::ListProjectDir, "complete");
    assert_eq!((expected.as_str(), actual.as_str()), ("true", "false"));
}

#[tokio::test]
async fn list_project_dir_over_max_entries_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/workspace/app/a", Entry::File(b"a".to_vec()));
    rt.provider().put(&id, "/workspace/app/link", Entry::Escape);
    let request = ListProjectDirRequest {
        instance_id: id,
        root: path("/workspace/app"),
        max_entries: MaxEntries::new(1).unwrap(),
    };
    let err = rt.list_project_dir(request).await.unwrap_err();
    protocol_invalid(&err, Operation::ListProjectDir, "entries");
}

#[tokio::test]
async fn an_honest_project_listing_names_special_files() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/workspace/app/a", Entry::File(b"a".to_vec()));
    rt.provider().put(&id, "/workspace/app/link", Entry::Escape);
    let listing = rt
        .list_project_dir(ListProjectDirRequest {
            instance_id: id,
            root: path("/workspace/app"),
            max_entries: MaxEntries::MAX,
        })
        .await
        .unwrap();
    assert!(listing.complete);
    assert!(matches!(listing.entries[1], ProjectEntry::Symlink { .. }));
}

#[tokio::test]
async fn a_listing_root_must_be_one_of_the_instance_mounts_or_the_output_tree() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let err = rt
        .list_dir(ListDirRequest {
            instance_id: id,
            root: path("/"),
            max_entries: MaxEntries::MAX,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::ListDir, FailureReason::OutsideRoot)
    );
    assert_eq!(rt.provider().log.calls(Operation::ListDir), 0);
}
