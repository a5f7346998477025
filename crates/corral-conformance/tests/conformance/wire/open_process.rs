//! `openProcess` over the wire: ordered lossless streams larger than both
//! windows, a real EOF, a re-readable exit, signals, idempotent destroy,
//! the one-live-process rule and the typed refusal of a failed open; the
//! runtime validates the evidence as it does in process.

use super::common;
use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use common::{provision_active, provision_request, read_to_end, runtime_over, token, write_all};
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_wire::WireProvider;
use corral_wire::protocol::{REPLAY_WINDOW_BYTES, STDIN_WINDOW_BYTES};

async fn runtime() -> (Runtime<WireProvider>, corral_wire::RunningServer) {
    runtime_over(ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap())
        .await
}

async fn active(runtime: &Runtime<WireProvider>) -> SandboxInstance {
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    provision_active(runtime, request).await
}

fn process(instance: &SandboxInstance, executable: &str, args: &[&str]) -> OpenProcessRequest {
    OpenProcessRequest {
        instance_id: instance.instance_id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new(executable).unwrap(),
            arguments: Arguments::new(args.iter().copied()).unwrap(),
            working_directory: None,
            environment: Environment::new(),
        },
    }
}

// Contract spec, "openProcess": input accepts ordered bytes and a half-close;
// output delivers ordered bytes with a real EOF, nothing lost, nothing
// duplicated; wait is re-readable; destroy is idempotent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_beyond_both_windows_arrive_whole_in_order_then_eof() {
    let (runtime, server) = runtime().await;
    let instance = active(&runtime).await;
    let request = process(&instance, "cat", &[]);
    let mut live = runtime.open_process(request.clone()).await.unwrap();
    assert!(
        evidence_mismatches(
            &request.process,
            &instance,
            runtime.capabilities(),
            live.evidence()
        )
        .is_empty()
    );
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    assert!(live.take_input().is_none(), "streams are taken once");
    let size = (STDIN_WINDOW_BYTES + REPLAY_WINDOW_BYTES + 12_345) as usize;
    let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let reader = tokio::spawn(async move { read_to_end(&mut output).await });
    write_all(&mut input, &payload).await;
    poll_fn(|cx| input.as_mut().poll_close(cx)).await.unwrap();
    let echoed = reader.await.unwrap();
    assert_eq!(echoed.len(), payload.len());
    assert!(
        echoed == payload,
        "nothing lost, nothing duplicated, in order"
    );
    let exit = ProcessExit::Code(ExitCode::SUCCESS);
    assert_eq!(live.wait().await.unwrap(), exit);
    assert_eq!(live.wait().await.unwrap(), exit, "wait is re-readable");
    live.destroy().await.unwrap();
    live.destroy().await.unwrap();
    runtime.destroy(instance.instance_id).await.unwrap();
    server.shut_down().await;
}

// Contract spec, "openProcess": at most one live process per instance,
// refused as SandboxLifecycleConflict process_already_open; signal delivers
// one control signal and wait settles with a signal name, re-readably.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_process_and_one_process_per_instance_holds() {
    let (runtime, server) = runtime().await;
    let instance = active(&runtime).await;
    let live = runtime
        .open_process(process(&instance, "sleep", &["30"]))
        .await
        .unwrap();
    let second = runtime
        .open_process(process(&instance, "sleep", &["30"]))
        .await
        .err()
        .unwrap();
    assert_eq!(
        second,
        SandboxError::lifecycle_conflict(
            Operation::OpenProcess,
            &[InstanceState::Active],
            ConflictState::ProcessAlreadyOpen
        )
    );
    live.signal(ControlSignal::Sigterm).await.unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), live.wait())
        .await
        .expect("a terminated process settles")
        .unwrap();
    assert_eq!(exit, ProcessExit::Signal(SignalName::Sigterm));
    assert_eq!(live.wait().await.unwrap(), exit);
    runtime.destroy(instance.instance_id).await.unwrap();
    server.shut_down().await;
}

// Contract spec, "openProcess": wait settles exactly once with an exit code
// (0-255) xor a signal name; "Errors": a failed open is one of the closed
// vocabulary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_code_crosses_and_a_missing_instance_is_the_typed_refusal() {
    let (runtime, server) = runtime().await;
    let instance = active(&runtime).await;
    let live = runtime
        .open_process(process(&instance, "sh", &["-c", "exit 4"]))
        .await
        .unwrap();
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::from(4))
    );
    drop(live);
    runtime.destroy(instance.instance_id.clone()).await.unwrap();
    let error = server_side_refusal(&server, &instance).await;
    assert!(
        matches!(
            error,
            SandboxError::SandboxInstanceNotFound { .. }
                | SandboxError::SandboxLifecycleConflict { .. }
        ),
        "{error}"
    );
    server.shut_down().await;
}

/// Opens a process on a destroyed instance straight through the client
/// (the runtime would refuse it before the wire).
async fn server_side_refusal(
    server: &corral_wire::RunningServer,
    instance: &SandboxInstance,
) -> SandboxError {
    let client = WireProvider::connect(&server.endpoint(), token())
        .await
        .unwrap();
    client
        .open_process(process(instance, "true", &[]))
        .await
        .err()
        .unwrap()
}

// Contract spec, "openProcess": destroy is idempotent and internally bounded
// so cleanup can settle; a wait never hangs on a server that is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_destroys_live_processes_and_zdr_instances_and_keeps_durable_ones() {
    let (runtime, server) = runtime().await;
    let zdr = active(&runtime).await;
    let request = provision_request(runtime.capabilities(), "memory", RetentionMode::Durable);
    let (durable, _) = runtime.provision(request).await.unwrap().into_parts();
    let live = runtime
        .open_process(process(&zdr, "sleep", &["30"]))
        .await
        .unwrap();
    let report = server.shut_down().await;
    assert_eq!(report.processes, 1);
    assert_eq!(report.destroyed, vec![zdr.instance_id.clone()]);
    assert_eq!(report.kept, vec![durable.instance_id.clone()]);
    assert!(report.failed.is_empty());
    // Its exit (a kill) or the closed stream, whichever crossed first:
    // `wait` settles, it does not hang on a server that is gone.
    let settled = tokio::time::timeout(Duration::from_secs(10), live.wait()).await;
    assert!(settled.is_ok(), "wait settles when the server goes");
}
