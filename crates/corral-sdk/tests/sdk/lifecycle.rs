//! `Sandbox::snapshot`, `create_from_snapshot`, `pause` and `resume` on the
//! memory backend, which has every primitive, and their `unsupported`
//! refusal on the local backend, which has no pause.

use corral_backend::{ErrorCode, Labels, SandboxStatus};
use corral_sdk::{CreateOptions, Operation, Sandbox};

use crate::sandbox_support::{local, memory};

/// SDK spec, the primitives: "`create(input)` | Create a sandbox with the
/// requested size, env, network, ports, limits, labels, and snapshot" — a
/// snapshot's files start a new sandbox; the source goes on independently.
#[tokio::test]
async fn a_snapshot_restores_into_a_new_independent_sandbox() {
    let t = memory();
    let sandbox = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    sandbox.run("echo one > /workspace/f").await.unwrap();
    let labels = Labels::from_pairs([("stage", "one")]).unwrap();
    let snap = sandbox.snapshot_labelled(&labels).await.unwrap();
    assert_eq!(snap.source_sandbox_id, sandbox.id());
    assert_eq!(snap.labels.get("stage").map(String::as_str), Some("one"));
    sandbox.run("echo two > /workspace/f").await.unwrap();

    let restored =
        Sandbox::create_from_snapshot(t.backend.clone(), &snap.id, CreateOptions::default())
            .await
            .unwrap();
    assert_ne!(restored.id(), sandbox.id());
    let read = |s: &Sandbox| {
        let s = s.clone();
        async move { s.run("cat /workspace/f").await.unwrap().stdout_text() }
    };
    assert_eq!(read(&restored).await, "one\n");
    assert_eq!(read(&sandbox).await, "two\n");

    let err =
        Sandbox::create_from_snapshot(t.backend.clone(), "memsnap-999", CreateOptions::default())
            .await
            .unwrap_err();
    assert_eq!(err.operation, Operation::Create);
    assert_eq!(err.code, ErrorCode::NotFound, "{err}");
}

/// SDK spec: pause freezes the sandbox (it runs nothing and lists as
/// paused) until resume.
#[tokio::test]
async fn pause_freezes_until_resume() {
    let t = memory();
    let sandbox = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    sandbox.pause().await.unwrap();
    let info = t.backend.connect(sandbox.id()).await.unwrap();
    assert_eq!(info.status, SandboxStatus::Paused);
    assert!(
        sandbox.run("true").await.is_err(),
        "a paused sandbox runs nothing"
    );
    sandbox.resume().await.unwrap();
    assert_eq!(sandbox.run("echo up").await.unwrap().stdout_text(), "up\n");
}

/// SDK spec, the primitives: "`pause`, `resume`, `snapshot`, `terminal` |
/// Optional. Must match `capabilities`." — a backend that does not declare
/// pause refuses it with `unsupported`, naming the operation, and does
/// nothing.
#[tokio::test]
async fn a_backend_without_pause_refuses_it_as_unsupported() {
    let t = local();
    let sandbox = Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap();
    for (op, result) in [
        (Operation::Pause, sandbox.pause().await),
        (Operation::Resume, sandbox.resume().await),
    ] {
        let err = result.unwrap_err();
        assert_eq!(
            (err.code, err.operation),
            (ErrorCode::Unsupported, op),
            "{err}"
        );
    }
    assert_eq!(
        sandbox.run("echo still").await.unwrap().stdout_text(),
        "still\n"
    );
    sandbox.destroy().await.unwrap();
}
