//! Reads: `readFile` — "Runtime rejects content over the caller's
//! `maximum_bytes`"; `readFiles` — "out-of-order, short, or over-budget
//! results fail the **whole batch** as `SandboxProtocolInvalid`".
//!
//! Two files are staged in the output tree; the liar reads them honestly
//! and then lies about the answer.

use crate::liar;
use corral_contract::{
    InstanceId, MaximumBytes, Operation, ReadFileOutcome, ReadFileRequest, ReadFilesMember,
    ReadFilesRequest, RetentionMode, SandboxInstance, SandboxProvider,
};
use liar::fixtures::{LiarRuntime, assert_protocol_invalid, memory_liar, path, refused, runtime};
use liar::flows::active_with_files;
use liar::lie::{Lie, ReadFilesLie};

const ROOT: &str = "/mnt/session/outputs";
const A: &str = "/mnt/session/outputs/a.txt";
const B: &str = "/mnt/session/outputs/b.txt";

async fn staged(lie: Option<Lie>) -> (LiarRuntime, SandboxInstance) {
    let liar = memory_liar();
    if let Some(lie) = lie {
        liar.tell(lie);
    }
    let runtime = runtime(liar);
    let (_, instance) = active_with_files(
        &runtime,
        RetentionMode::EphemeralZdr,
        &[(A, b"abc"), (B, b"de")],
    )
    .await;
    (runtime, instance)
}

fn read_a(instance: &InstanceId) -> ReadFileRequest {
    ReadFileRequest::new(
        instance.clone(),
        path(A),
        path(ROOT),
        MaximumBytes::new(3).expect("literal"),
    )
    .expect("A is under the root")
}

fn batch(instance: &InstanceId) -> ReadFilesRequest {
    let member = |at: &str, max: u64| ReadFilesMember {
        path: path(at),
        maximum_bytes: MaximumBytes::new(max).expect("literal"),
    };
    ReadFilesRequest::new(
        instance.clone(),
        path(ROOT),
        vec![member(A, 3), member(B, 2)],
    )
    .expect("two distinct members under the root")
}

/// The honest baseline: the same reads through the same liar are accepted.
#[tokio::test]
async fn reads_accept_honest_results() {
    let (runtime, instance) = staged(None).await;
    let one = runtime
        .read_file(read_a(&instance.instance_id))
        .await
        .expect("an honest read is accepted");
    assert_eq!(&one.content[..], b"abc");
    let many = runtime
        .read_files(batch(&instance.instance_id))
        .await
        .expect("an honest batch is accepted");
    let paths: Vec<&str> = many.files.iter().map(|f| f.path().as_str()).collect();
    assert_eq!(paths, [A, B]);
    assert!(
        matches!(&many.files[0], ReadFileOutcome::Ok { content, .. } if &content[..] == b"abc")
    );
}

/// `readFile`: "content over the caller's `maximum_bytes`".
#[tokio::test]
async fn read_file_rejects_content_over_maximum_bytes() {
    let (runtime, instance) = staged(Some(Lie::ReadFileOverMaximum)).await;
    let error = refused(runtime.read_file(read_a(&instance.instance_id)).await);
    assert_protocol_invalid(
        &error,
        Operation::ReadFile,
        "content",
        "at most 3 bytes (maximum_bytes)",
        "4 bytes",
    );
}

/// `readFiles`: a short result fails the whole batch.
#[tokio::test]
async fn read_files_rejects_short_batch() {
    let (runtime, instance) = staged(Some(Lie::ReadFiles(ReadFilesLie::Short))).await;
    let error = refused(runtime.read_files(batch(&instance.instance_id)).await);
    assert_protocol_invalid(
        &error,
        Operation::ReadFiles,
        "files",
        "2 outcomes",
        "1 outcomes",
    );
}

/// `readFiles`: an out-of-order result fails the whole batch.
#[tokio::test]
async fn read_files_rejects_reordered_batch() {
    let (runtime, instance) = staged(Some(Lie::ReadFiles(ReadFilesLie::Reordered))).await;
    let error = refused(runtime.read_files(batch(&instance.instance_id)).await);
    assert_protocol_invalid(&error, Operation::ReadFiles, "files[0].path", A, B);
}

/// `readFiles`: an over-budget result fails the whole batch.
#[tokio::test]
async fn read_files_rejects_over_budget_batch() {
    let (runtime, instance) = staged(Some(Lie::ReadFiles(ReadFilesLie::OverBudget))).await;
    let error = refused(runtime.read_files(batch(&instance.instance_id)).await);
    assert_protocol_invalid(
        &error,
        Operation::ReadFiles,
        "files[0].content",
        "at most 3 bytes",
        "4 bytes",
    );
}
