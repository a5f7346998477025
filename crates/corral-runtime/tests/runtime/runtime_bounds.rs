//! The bounds table: "Enforce these, and expect the Runner to enforce them
//! again on your results", and "`execute` additionally refuses a
//! `timeout_seconds` above the profile's `max_duration_seconds`".

use crate::common_runtime;
use std::sync::Arc;

use common_runtime::*;
use corral_contract::*;

fn execute(id: &InstanceId, timeout: u64, limit: u64) -> ExecuteRequest {
    ExecuteRequest {
        instance_id: id.clone(),
        command: command(timeout, limit),
    }
}

#[tokio::test]
async fn execute_refuses_a_timeout_above_the_profiles_max_duration_before_calling_provider() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let err = rt.execute(execute(&id, 601, 1024)).await.unwrap_err();
    assert_eq!(
        err,
        SandboxError::capability_unavailable(Requirement::Resources)
    );
    assert_eq!(rt.provider().log.calls(Operation::Execute), 0);
    rt.execute(execute(&id, 600, 1024)).await.unwrap();
    assert_eq!(rt.provider().log.calls(Operation::Execute), 1);
}

#[tokio::test]
async fn execute_result_with_a_stream_over_output_limit_bytes_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.execution = Some(Arc::new(|r: &mut SandboxExecutionResult| {
            r.stderr.content = OutputBytes::new(vec![b'e'; 9]).unwrap();
        }))
    });
    let err = rt.execute(execute(&id, 30, 8)).await.unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::Execute, "stderr.content");
    assert_eq!(expected, "at most 8 bytes (output_limit_bytes)");
    assert_eq!(actual, "9 bytes");
}

#[tokio::test]
async fn execute_result_marked_truncated_short_of_the_limit_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.execution = Some(Arc::new(|r: &mut SandboxExecutionResult| {
            r.stdout.truncated = true;
        }))
    });
    let err = rt.execute(execute(&id, 30, 1024)).await.unwrap_err();
    protocol_invalid(&err, Operation::Execute, "stdout.truncated");
}

#[tokio::test]
async fn execute_passes_stdin_through_unchanged() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let mut request = execute(&id, 30, 1024);
    request.command.stdin = Some(StdinBytes::new(b"prompt".to_vec()).unwrap());
    let result = rt.execute(request).await.unwrap();
    assert_eq!(result.stdout.content.to_vec(), b"hi\n".to_vec());
}

#[tokio::test]
async fn read_file_content_over_the_callers_maximum_bytes_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/mnt/session/outputs/a", Entry::File(b"1234".to_vec()));
    rt.provider().knobs(|k| {
        k.read_file = Some(Arc::new(|r: &mut ReadFileResult| {
            r.content = FileContent::new(b"123456".to_vec()).unwrap();
        }))
    });
    let request = ReadFileRequest::new(
        id,
        path("/mnt/session/outputs/a"),
        path("/mnt/session/outputs"),
        MaximumBytes::new(4).unwrap(),
    )
    .unwrap();
    let err = rt.read_file(request).await.unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::ReadFile, "content");
    assert_eq!(expected, "at most 4 bytes (maximum_bytes)");
    assert_eq!(actual, "6 bytes");
}

#[tokio::test]
async fn read_file_fails_closed_without_physically_contained_reads_before_calling_provider() {
    let mut declaration = full_declaration();
    declaration.read_files = false;
    declaration.physically_contained_file_read = false;
    let rt = runtime(Fake::new(caps(declaration)));
    let id = active(&rt, zdr_request()).await;
    rt.provider()
        .put(&id, "/mnt/session/outputs/a", Entry::File(b"1234".to_vec()));
    let request = ReadFileRequest::new(
        id.clone(),
        path("/mnt/session/outputs/a"),
        path("/mnt/session/outputs"),
        MaximumBytes::new(4).unwrap(),
    )
    .unwrap();
    let fail_closed =
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead);
    assert_eq!(rt.read_file(request).await.unwrap_err(), fail_closed);
    let batch = rt
        .read_paths(id, vec![member("/mnt/session/outputs/a", 4)])
        .await
        .unwrap_err();
    assert_eq!(batch, fail_closed);
    assert_eq!(rt.provider().log.calls(Operation::ReadFile), 0);
    assert_eq!(rt.provider().log.calls(Operation::ReadFiles), 0);
}

#[tokio::test]
async fn list_dir_over_max_entries_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    for name in ["a", "b", "c"] {
        rt.provider().put(
            &id,
            &format!("/mnt/session/outputs/{name}"),
            Entry::File(b"x".to_vec()),
        );
    }
    let request = ListDirRequest {
        instance_id: id,
        root: path("/mnt/session/outputs"),
        max_entries: MaxEntries::new(2).unwrap(),
    };
    let err = rt.list_dir(request).await.unwrap_err();
    let (_, actual) = protocol_invalid(&err, Operation::ListDir, "entries");
    assert_eq!(actual, "3 entries");
}

#[tokio::test]
async fn list_dir_entry_outside_the_root_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.list_dir = Some(Arc::new(|r: &mut ListDirResult| {
            r.entries.push(ListDirEntry {
                path: path("/etc/shadow"),
                size: FileSize::of_len(1),
                sha256: Digest::new(D2).unwrap(),
            })
        }))
    });
    let request = ListDirRequest {
        instance_id: id,
        root: path("/workspace/app"),
        max_entries: MaxEntries::MAX,
    };
    let err = rt.list_dir(request).await.unwrap_err();
    let (_, actual) = protocol_invalid(&err, Operation::ListDir, "entries[0].path");
    assert_eq!(actual, "/etc/shadow");
}
