//! `openProcess` on both backends: live streams, exit, signal, teardown and
//! the one-live-process rule.

use crate::adapter_support;
use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use adapter_support::*;
use corral_backend::Backend;
use corral_contract::*;
use corral_runtime::adapter::ContractAdapter;

fn process(instance: &SandboxInstance, executable: &str, args: &[&str]) -> OpenProcessRequest {
    OpenProcessRequest {
        instance_id: instance.instance_id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new(executable).unwrap(),
            arguments: Arguments::new(args.iter().copied()).unwrap(),
            working_directory: Some(path("/mnt/session/outputs")),
            environment: Environment::new().with("CORRAL_TEST", "1").unwrap(),
        },
    }
}

async fn write_all(sink: &mut Pin<Box<dyn ByteSink>>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let n = poll_fn(|cx| sink.as_mut().poll_write(cx, bytes))
            .await
            .unwrap();
        bytes = &bytes[n..];
    }
    poll_fn(|cx| sink.as_mut().poll_flush(cx)).await.unwrap();
}

async fn read_to_end(source: &mut Pin<Box<dyn ByteSource>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf))
            .await
            .unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// "input accepts ordered bytes and a half-close … output delivers ordered
/// bytes with a real EOF … wait settles exactly once … and must be
/// re-readable"; the evidence agrees with the instance and the request.
async fn streams_exit_and_evidence<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let request = process(&instance, "cat", &[]);
    let mut live = adapter.open_process(request.clone()).await.unwrap();
    assert!(
        evidence_mismatches(
            &request.process,
            &instance,
            adapter.capabilities(),
            live.evidence()
        )
        .is_empty()
    );
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    assert!(live.take_input().is_none(), "streams are taken once");
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let reader = tokio::spawn(async move { read_to_end(&mut output).await });
    write_all(&mut input, &payload).await;
    poll_fn(|cx| input.as_mut().poll_close(cx)).await.unwrap();
    let echoed = reader.await.unwrap();
    assert_eq!(echoed.len(), payload.len());
    assert!(
        echoed == payload,
        "nothing lost, nothing duplicated, in order"
    );
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::SUCCESS)
    );
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::SUCCESS)
    );
    live.destroy().await.unwrap();
}

#[tokio::test]
async fn streams_exit_and_evidence_on_memory() {
    streams_exit_and_evidence(&memory()).await;
}

#[tokio::test]
async fn streams_exit_and_evidence_on_local() {
    let (adapter, _dir) = local();
    streams_exit_and_evidence(&adapter).await;
}

/// "At most one live process per instance, which you enforce … refuses a
/// second open as SandboxLifecycleConflict{operation: open_process, actual:
/// process_already_open}"; the reservation ends with the process.
async fn one_live_process_per_instance<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let (_, other) = active(adapter, &Spec::default()).await;
    let first = adapter
        .open_process(process(&instance, "sleep", &["30"]))
        .await
        .unwrap();
    let second = refused(
        adapter
            .open_process(process(&instance, "sleep", &["30"]))
            .await,
    );
    assert_eq!(
        second,
        SandboxError::lifecycle_conflict(
            Operation::OpenProcess,
            &[InstanceState::Active],
            ConflictState::ProcessAlreadyOpen
        )
    );
    // Another instance is unaffected.
    let elsewhere = adapter
        .open_process(process(&other, "sleep", &["30"]))
        .await
        .unwrap();
    // Destroyed: the reservation is released; destroy is idempotent.
    first.destroy().await.unwrap();
    first.destroy().await.unwrap();
    let third = adapter
        .open_process(process(&instance, "sh", &["-c", "exit 4"]))
        .await
        .unwrap();
    assert_eq!(
        third.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::from(4))
    );
    // Exited on its own: released without a destroy.
    let mut reopened = None;
    for _ in 0..200 {
        match adapter.open_process(process(&instance, "true", &[])).await {
            Ok(p) => {
                reopened = Some(p);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    assert!(reopened.is_some(), "the exit released the reservation");
    elsewhere.destroy().await.unwrap();
}

#[tokio::test]
async fn one_live_process_per_instance_on_memory() {
    one_live_process_per_instance(&memory()).await;
}

#[tokio::test]
async fn one_live_process_per_instance_on_local() {
    let (adapter, _dir) = local();
    one_live_process_per_instance(&adapter).await;
}

/// "signal delivers one control signal"; the exit names the signal.
async fn signal_ends_the_process<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let live = adapter
        .open_process(process(&instance, "sleep", &["30"]))
        .await
        .unwrap();
    live.signal(ControlSignal::Sigterm).await.unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(5), live.wait())
        .await
        .expect("a terminated process settles")
        .unwrap();
    assert_eq!(exit, ProcessExit::Signal(SignalName::Sigterm));
    assert_eq!(live.wait().await.unwrap(), exit);
}

#[tokio::test]
async fn signal_ends_the_process_on_memory() {
    signal_ends_the_process(&memory()).await;
}

#[tokio::test]
async fn signal_ends_the_process_on_local() {
    let (adapter, _dir) = local();
    signal_ends_the_process(&adapter).await;
}

/// "error is diagnostic only … It needs a bound and best-effort delivery":
/// an error stream nobody reads never blocks the process, and holds at most
/// the bound.
async fn an_unread_error_stream_never_blocks<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let script = "yes | head -c 3000000 >&2; echo done";
    let mut live = adapter
        .open_process(process(&instance, "sh", &["-c", script]))
        .await
        .unwrap();
    let mut output = live.take_output().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), read_to_end(&mut output))
        .await
        .expect("stdout reaches EOF although stderr is never read");
    assert_eq!(out, b"done\n");
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::SUCCESS)
    );
    let mut error = live.take_error().unwrap();
    let diagnostics = read_to_end(&mut error).await;
    assert!(!diagnostics.is_empty());
    assert!(diagnostics.len() <= 1024 * 1024, "{}", diagnostics.len());
    assert!(diagnostics.starts_with(b"y\ny\n"));
}

#[tokio::test]
async fn an_unread_error_stream_never_blocks_on_memory() {
    an_unread_error_stream_never_blocks(&memory()).await;
}

#[tokio::test]
async fn an_unread_error_stream_never_blocks_on_local() {
    let (adapter, _dir) = local();
    an_unread_error_stream_never_blocks(&adapter).await;
}

#[tokio::test]
async fn open_process_is_refused_before_activation_and_when_absent() {
    let adapter = memory();
    let (_, instance) = provision(&adapter, &Spec::default()).await;
    assert_eq!(
        refused(adapter.open_process(process(&instance, "true", &[])).await),
        SandboxError::lifecycle_conflict(
            Operation::OpenProcess,
            &[InstanceState::Active],
            ConflictState::Provisioning
        )
    );
    let absent = memory_with(|d| d.open_process = false);
    let (_, instance) = active(&absent, &Spec::default()).await;
    assert_eq!(
        refused(absent.open_process(process(&instance, "true", &[])).await),
        Operation::OpenProcess.absent_refusal().unwrap()
    );
}

/// `destroy` tears down the instance "and everything in it": its live
/// process ends.
async fn destroying_the_instance_ends_its_process<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
) {
    let (_, instance) = active(adapter, &Spec::default()).await;
    let live = adapter
        .open_process(process(&instance, "sleep", &["30"]))
        .await
        .unwrap();
    adapter.destroy(instance.instance_id.clone()).await.unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(5), live.wait())
        .await
        .expect("the process ends with its instance")
        .unwrap();
    assert_eq!(exit, ProcessExit::Signal(SignalName::Sigkill));
    assert_eq!(
        refused(adapter.open_process(process(&instance, "true", &[])).await),
        SandboxError::SandboxInstanceNotFound {
            instance_id: instance.instance_id.clone()
        }
    );
}

#[tokio::test]
async fn destroying_the_instance_ends_its_process_on_memory() {
    destroying_the_instance_ends_its_process(&memory()).await;
}

#[tokio::test]
async fn destroying_the_instance_ends_its_process_on_local() {
    let (adapter, _dir) = local();
    destroying_the_instance_ends_its_process(&adapter).await;
}
