//! Live processes.

use crate::common;
use corral_backend::rules::sp;
use std::time::Duration;

use common::{backend, sandbox};
use corral_backend::{
    Backend, Command, ControlSignal, ErrorCode, ExitStatus, ProcessSpec, SignalName,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn spec(argv: &[&str]) -> ProcessSpec {
    ProcessSpec::new(Command::argv(argv.iter().copied()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_echoes_until_half_close() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let ops = b.process_ops().unwrap();
    let mut p = ops.start_process(&info.id, spec(&["cat"])).await.unwrap();
    assert!(p.control.pid().is_some());
    p.stdin.write_all(b"hello\n").await.unwrap();
    p.stdin.flush().await.unwrap();
    let mut buf = [0u8; 6];
    tokio::time::timeout(Duration::from_secs(5), p.stdout.read_exact(&mut buf))
        .await
        .expect("echo arrives before EOF")
        .unwrap();
    assert_eq!(&buf, b"hello\n");
    p.stdin.write_all(b"more").await.unwrap();
    p.stdin.shutdown().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), p.stdout.read_to_end(&mut rest))
        .await
        .expect("stdout ends after stdin is closed")
        .unwrap();
    assert_eq!(rest, b"more");
    assert!(p.stdin.write_all(b"late").await.is_err());
    let status = p.control.wait().await.unwrap();
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(
        p.control.wait().await.unwrap(),
        status,
        "wait is re-readable"
    );
    p.control.kill().await.unwrap();
    p.control.signal(ControlSignal::Sigterm).await.unwrap();
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_is_idempotent_and_takes_the_group() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let ops = b.process_ops().unwrap();
    let p = ops
        .start_process(
            &info.id,
            spec(&["sh", "-c", "(sleep 1; echo late > late.txt) & sleep 30"]),
        )
        .await
        .unwrap();
    let control = p.control.clone();
    let waiter = tokio::spawn(async move { control.wait().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    p.control.kill().await.unwrap();
    p.control.kill().await.unwrap();
    let status = waiter.await.unwrap().unwrap();
    assert_eq!(status, ExitStatus::Signal(SignalName::Sigkill));
    assert_eq!(p.control.wait().await.unwrap(), status);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        b.files()
            .stat(&info.id, &sp("/workspace/late.txt"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound,
        "the grandchild died with its group"
    );
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_reach_the_process_and_stderr_is_separate() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let ops = b.process_ops().unwrap();
    let mut p = ops
        .start_process(
            &info.id,
            spec(&["sh", "-c", "echo ready >&2; exec sleep 30"]),
        )
        .await
        .unwrap();
    let mut buf = [0u8; 6];
    p.stderr.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ready\n");
    p.control.signal(ControlSignal::Sigterm).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), p.control.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, ExitStatus::Signal(SignalName::Sigterm));
    let mut out = Vec::new();
    p.stdout.read_to_end(&mut out).await.unwrap();
    assert!(out.is_empty());
    let err = ops
        .start_process(
            &info.id,
            ProcessSpec {
                cwd: Some(sp("/nope")),
                ..spec(&["true"])
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    let err = ops
        .start_process("loc-0000000000000000", spec(&["true"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    b.destroy(&info.id).await.unwrap();
}
