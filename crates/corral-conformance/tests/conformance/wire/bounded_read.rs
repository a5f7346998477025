//! The backend routes' `read` is bounded like the contract's reads: a file
//! past 16 MiB is refused in one line naming the bound and the ranged read,
//! which still serves it.

use super::common;
use corral_backend::rules::sp;
use std::sync::Arc;

use common::remote_over;
use corral_backend::{Backend, CreateRequest, ErrorCode};
use corral_backend_memory::MemoryBackend;
use corral_registry::envelopes;

const MIB: usize = 1 << 20;

/// Issue 12, item 16: `/v1/backend/read` of a file larger than 16 MiB is
/// `invalid_input` naming the bound and `read_range`, and is never read
/// whole by the server; a ranged read of it and a whole read of a file at
/// the bound still answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_read_past_16_mib_is_refused_and_ranged_reads_serve_it() {
    let memory = Arc::new(MemoryBackend::new());
    let (remote, _server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    let sb = remote.create(CreateRequest::default()).await.unwrap();
    let files = memory.files();
    files
        .write(
            &sb.id,
            &sp("/workspace/big"),
            &vec![7u8; 16 * MIB + 1],
            None,
        )
        .await
        .unwrap();
    files
        .write(
            &sb.id,
            &sp("/workspace/at-bound"),
            &vec![8u8; 16 * MIB],
            None,
        )
        .await
        .unwrap();

    let err = remote
        .files()
        .read(&sb.id, &sp("/workspace/big"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    assert!(
        err.message().contains("16777216") && err.message().contains("read_range"),
        "{err}"
    );
    assert!(!err.message().contains('\n'), "one line: {err}");

    let ranged = remote.files().ranged().expect("the memory backend ranges");
    let tail = ranged
        .read_range(&sb.id, &sp("/workspace/big"), 16 * MIB as u64 - 1, 1 << 20)
        .await
        .unwrap();
    assert_eq!(tail, vec![7u8; 2]);
    let whole = remote
        .files()
        .read(&sb.id, &sp("/workspace/at-bound"))
        .await
        .unwrap();
    assert_eq!(whole.len(), 16 * MIB);
    let missing = remote.files().read(&sb.id, &sp("/workspace/none")).await;
    assert_eq!(missing.unwrap_err().code(), ErrorCode::NotFound);
}
