//! The remote backend beyond the shared backend rules: what it declares,
//! the optional members it forwards, a client that vanishes mid-run, and
//! a server that serves the contract only.

use super::common;
use corral_backend::rules::sp;
use std::sync::Arc;
use std::time::Duration;

use common::{remote_over, serve, token};
use corral_backend::{
    Backend, BatchFile, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest, Labels,
};
use corral_backend_memory::MemoryBackend;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_wire::RemoteBackend;

// SDK spec, "Rules an adapter must follow": declare what you implement —
// the remote backend declares what its server's backend declares, less
// what the wire does not carry, and nothing it cannot forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_declares_the_served_backends_members_less_what_the_wire_does_not_carry() {
    let memory = Arc::new(MemoryBackend::new());
    let served = memory.capabilities();
    let (remote, server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    let caps = remote.capabilities();
    assert_eq!(remote.name(), "remote");
    assert_eq!(remote.served(), "memory");
    assert_eq!(remote.key_mode(), memory.key_mode());
    assert!(served.start_process && served.terminal && served.contained_read);
    assert!(!caps.start_process && !caps.terminal && !caps.contained_read);
    assert!(remote.process_ops().is_none() && remote.terminal_ops().is_none());
    assert_eq!(caps.enforces, served.enforces);
    assert!(caps.pause && caps.snapshot && caps.snapshot_clone && caps.usage);
    corral_backend::verify(&remote).unwrap();
    server.shut_down().await;
}

// SDK spec, the backend members: "`pause`, `resume`, `snapshot`,
// `terminal` | Optional. Must match `capabilities`." — each optional member
// the remote declares is there and reaches the served backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_snapshots_usage_trees_and_batches_reach_the_served_backend() {
    let memory = Arc::new(MemoryBackend::new());
    let (remote, server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    let sb = remote.create(CreateRequest::default()).await.unwrap();
    let batch = vec![
        BatchFile {
            path: sp("/workspace/a.txt"),
            bytes: b"alpha".to_vec(),
            mode: None,
        },
        BatchFile {
            path: sp("/workspace/b.txt"),
            bytes: b"beta".to_vec(),
            mode: Some(0o600),
        },
    ];
    remote
        .batch_write_ops()
        .unwrap()
        .write_batch(&sb.id, batch)
        .await
        .unwrap();
    // What the remote wrote, the served backend holds.
    assert_eq!(
        memory
            .files()
            .read(&sb.id, &sp("/workspace/b.txt"))
            .await
            .unwrap(),
        b"beta"
    );
    let tree = remote
        .tree_list_ops()
        .unwrap()
        .list_tree(&sb.id, &sp("/workspace"), 100)
        .await
        .unwrap();
    assert!(tree.complete);
    assert!(
        tree.entries.iter().any(|e| e.path.ends_with("a.txt")),
        "{tree:?}"
    );
    let snapshot = remote
        .snapshot_ops()
        .unwrap()
        .snapshot(&sb.id, &Labels::new())
        .await
        .unwrap();
    let listed = remote
        .snapshot_ops()
        .unwrap()
        .list_snapshots(&Labels::new())
        .await
        .unwrap();
    assert!(listed.iter().any(|s| s.id == snapshot.id));
    let pause = remote.pause_ops().unwrap();
    pause.pause(&sb.id).await.unwrap();
    pause.resume(&sb.id).await.unwrap();
    remote.usage_ops().unwrap().usage(&sb.id).await.unwrap();
    remote
        .snapshot_ops()
        .unwrap()
        .delete_snapshot(&snapshot.id)
        .await
        .unwrap();
    remote.destroy(&sb.id).await.unwrap();
    let gone = remote.connect(&sb.id).await.unwrap_err();
    assert_eq!(gone.code(), ErrorCode::NotFound, "{gone}");
    server.shut_down().await;
}

// SDK spec, exec: "kills the entire remote process group before settling
// on timeout or abort" — and a client that vanishes leaves nothing
// running: the lost connection aborts the run on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_mid_run_leaves_nothing_running() {
    let memory = Arc::new(MemoryBackend::new());
    let (remote, server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    let sb = remote.create(CreateRequest::default()).await.unwrap();
    let request =
        ExecRequest::new(Command::shell("sleep 1; echo late > /workspace/late.txt").unwrap());
    let mut sink = CollectedOutput::default();
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        remote.exec(&sb.id, request, &mut sink),
    )
    .await;
    assert!(dropped.is_err(), "the run was still going");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late = memory
        .files()
        .read(&sb.id, &sp("/workspace/late.txt"))
        .await;
    assert_eq!(
        late.map_err(|e| e.code()),
        Err(ErrorCode::NotFound),
        "the run went on after its client vanished"
    );
    remote.destroy(&sb.id).await.unwrap();
    server.shut_down().await;
}

// SDK spec, "Rules an adapter must follow": "Translate errors. Map the
// service's failures to `SandboxError` codes" — a server without the
// backend routes is `unsupported`, naming the server and the route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_serves_the_contract_only_is_unsupported() {
    let adapter =
        ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let refused = RemoteBackend::connect(&server.endpoint(), token())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Unsupported, "{refused}");
    assert!(refused.message().contains(&server.endpoint()), "{refused}");
    assert!(refused.message().contains("describe"), "{refused}");
    server.shut_down().await;
}

// SDK spec, "Rules an adapter must follow": "Translate errors." — an
// endpoint that is not `http://HOST:PORT` is `invalid_input`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_endpoint_is_invalid_input_in_one_line() {
    let refused = RemoteBackend::connect("ftp://somewhere", token())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidInput, "{refused}");
    assert!(!refused.message().contains('\n'));
}
