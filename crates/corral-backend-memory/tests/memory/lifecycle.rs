//! Create, find, list, destroy, expiry by the clock, previews, native,
//! snapshots, pause and usage.

use corral_backend::rules::sp;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{
    Backend, BackendError, CreateError, CreateRequest, ErrorCode, KeyMode, Labels, SandboxStatus,
    verify,
};
use corral_backend_memory::{ManualClock, MemoryBackend};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied()).unwrap()
}

#[tokio::test]
async fn it_declares_everything_and_verifies() {
    let b = MemoryBackend::new();
    verify(&b).unwrap();
    assert_eq!(b.name(), "memory");
    assert_eq!(b.key_mode(), KeyMode::Exact);
    let caps = b.capabilities();
    assert!(caps.pause && caps.snapshot && caps.snapshot_clone && caps.terminal);
    assert!(caps.start_process && caps.usage && caps.read_range && caps.contained_read);
    assert!(caps.list_tree && caps.write_batch && caps.previews);
    assert_eq!(caps.enforces, corral_backend::Enforceable::ALL);
    // Its `write` leaves missing parents to the caller (the SDK core's
    // `mkdir`): it is opened without the `write_creates_parents` hint.
    let sb = b.create(CreateRequest::default()).await.unwrap();
    let err = b
        .files()
        .write(&sb.id, &sp("/workspace/no/parent.txt"), b"x", None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
}

#[tokio::test]
async fn ids_are_deterministic_and_keys_exact() {
    let clock = Arc::new(ManualClock::new(5_000));
    let b = MemoryBackend::with_clock(clock.clone());
    let a = b
        .create(CreateRequest {
            key: Some("k".try_into().unwrap()),
            labels: labels(&[("team", "a")]),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (a.id.as_str(), a.created_at_ms, a.backend.as_str()),
        ("mem-1", 5_000, "memory")
    );
    assert_eq!(a.status, SandboxStatus::Running);
    let dup = CreateRequest {
        key: Some("k".try_into().unwrap()),
        ..CreateRequest::default()
    };
    assert_eq!(
        b.create(dup.clone()).await.unwrap_err().code(),
        ErrorCode::Conflict
    );
    let c = b.create(CreateRequest::default()).await.unwrap();
    assert_eq!(c.id, "mem-2");
    assert_eq!(
        b.find(&"k".try_into().unwrap()).await.unwrap().unwrap().id,
        "mem-1"
    );
    let listed: Vec<String> = b
        .list(&Labels::new())
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["mem-1", "mem-2"]);
    assert_eq!(b.list(&labels(&[("team", "a")])).await.unwrap().len(), 1);
    assert!(b.list(&labels(&[("team", "b")])).await.unwrap().is_empty());
    b.destroy("mem-1").await.unwrap();
    b.destroy("mem-1").await.unwrap();
    // The key is free again; ids never repeat.
    assert_eq!(b.create(dup).await.unwrap().id, "mem-3");
}

#[tokio::test]
async fn timeout_and_idle_timeout_expire_by_the_clock() {
    let clock = Arc::new(ManualClock::new(0));
    let b = MemoryBackend::with_clock(clock.clone());
    let timed = b
        .create(CreateRequest {
            timeout: Some(Duration::from_secs(60)),
            key: Some("timed".try_into().unwrap()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(timed.expires_at_ms, Some(60_000));
    let idle = b
        .create(CreateRequest {
            idle_timeout: Some(Duration::from_secs(10)),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    clock.set(9_000);
    b.files()
        .write(&idle.id, &sp("/tmp/x"), b"keep alive", None)
        .await
        .unwrap();
    clock.set(18_000);
    b.connect(&idle.id).await.unwrap();
    clock.set(28_000);
    assert_eq!(
        b.connect(&idle.id).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(b.connect(&timed.id).await.unwrap().id, timed.id);
    clock.set(59_999);
    assert!(
        b.find(&"timed".try_into().unwrap())
            .await
            .unwrap()
            .is_some()
    );
    clock.set(60_000);
    assert!(
        b.find(&"timed".try_into().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    assert!(b.list(&Labels::new()).await.unwrap().is_empty());
    let err = b.files().read(&timed.id, &sp("/tmp/x")).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    // An expired key is free again.
    b.create(CreateRequest {
        key: Some("timed".try_into().unwrap()),
        ..CreateRequest::default()
    })
    .await
    .unwrap();
}

/// Reads have no side effects: an expired sandbox reads as gone however
/// often it is read, and is removed only by a call that changes which
/// sandboxes exist (here the destroy of another one). The backend's debug
/// form counts the sandboxes it holds, expired ones included.
#[tokio::test]
async fn reading_an_expired_sandbox_twice_changes_nothing() {
    let clock = Arc::new(ManualClock::new(0));
    let b = MemoryBackend::with_clock(clock.clone());
    let timed = b
        .create(CreateRequest {
            timeout: Some(Duration::from_secs(10)),
            key: Some("timed".try_into().unwrap()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let live = b.create(CreateRequest::default()).await.unwrap();
    clock.set(10_000);
    let held = format!("{b:?}");
    assert!(held.contains("sandboxes: 2"), "{held}");
    for round in 1..=2 {
        assert!(
            b.find(&"timed".try_into().unwrap())
                .await
                .unwrap()
                .is_none(),
            "round {round}"
        );
        let listed: Vec<String> = b
            .list(&Labels::new())
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.id.to_string())
            .collect();
        assert_eq!(listed, [live.id.to_string()], "round {round}");
        let gone = [
            ("connect", b.connect(&timed.id).await.map(drop)),
            ("native", b.native(&timed.id).await.map(drop)),
            (
                "stat",
                b.files().stat(&timed.id, &sp("/workspace")).await.map(drop),
            ),
            (
                "read",
                b.files().read(&timed.id, &sp("/tmp/x")).await.map(drop),
            ),
            (
                "write",
                b.files().write(&timed.id, &sp("/tmp/x"), b"x", None).await,
            ),
        ];
        for (call, result) in gone {
            let err = result.expect_err(call);
            assert_eq!(err.code(), ErrorCode::NotFound, "round {round}: {call}");
        }
        assert_eq!(
            format!("{b:?}"),
            held,
            "round {round}: a read changed the backend"
        );
    }
    b.destroy(&live.id).await.unwrap();
    let after = format!("{b:?}");
    assert!(after.contains("sandboxes: 0"), "{after}");
}

#[tokio::test]
async fn previews_and_native() {
    let b = MemoryBackend::new().with_image("ignored:latest");
    let mut req = CreateRequest {
        ports: vec![8080],
        image: Some("ignored:latest".into()),
        ..CreateRequest::default()
    };
    req.env
        .insert(corral_backend::EnvKey::new("SECRET").unwrap(), "hunter2")
        .unwrap();
    let id = b.create(req).await.unwrap().id;
    let url = b.preview_url(&id, 8080).await.unwrap();
    assert_eq!(url.url, format!("memory://{id}:8080"));
    assert_eq!(
        b.preview_url(&id, 9090).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        b.preview_url(&id, 0).await.unwrap_err().code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        b.preview_url("mem-9", 8080).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    let native = b.native(&id).await.unwrap();
    assert_eq!(native["id"], id.as_str());
    assert_eq!(native["env_keys"][0], "SECRET");
    assert!(
        !native.to_string().contains("hunter2"),
        "native leaks env values"
    );
    assert_eq!(native["image"], "ignored:latest");
}

#[tokio::test]
async fn snapshots_restore_and_clone() {
    let clock = Arc::new(ManualClock::new(100));
    let b = MemoryBackend::with_clock(clock.clone());
    let src = b
        .create(CreateRequest {
            labels: labels(&[("app", "x")]),
            ..CreateRequest::default()
        })
        .await
        .unwrap()
        .id;
    let f = b.files();
    f.mkdir(&src, &sp("/workspace/d"), false).await.unwrap();
    f.write(&src, &sp("/workspace/d/a"), b"A", Some(0o700))
        .await
        .unwrap();
    b.symlink(&src, &sp("/workspace/l"), "d/a").unwrap();
    let snaps = b.snapshot_ops().unwrap();
    let s1 = snaps.snapshot(&src, &labels(&[("v", "1")])).await.unwrap();
    assert_eq!(
        (s1.id.as_str(), s1.source_sandbox_id.as_str()),
        ("memsnap-1", src.as_str())
    );
    assert!(s1.digest.starts_with("sha256:") && s1.digest.len() == 71);
    assert_eq!(s1.labels, labels(&[("app", "x"), ("v", "1")]));
    // Later changes do not reach the snapshot.
    f.write(&src, &sp("/workspace/d/a"), b"changed", None)
        .await
        .unwrap();
    clock.set(999);
    let restored = b
        .create(CreateRequest {
            snapshot: Some(s1.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap()
        .id;
    assert_eq!(f.read(&restored, &sp("/workspace/l")).await.unwrap(), b"A");
    assert_eq!(
        f.stat(&restored, &sp("/workspace/d/a")).await.unwrap().mode,
        0o700
    );
    // Same content, same digest, whatever the clock says.
    let again = snaps.snapshot(&restored, &Labels::new()).await.unwrap();
    assert_eq!(again.digest, s1.digest);
    let clone = b
        .snapshot_clone_ops()
        .unwrap()
        .clone_snapshot(&s1.id, &labels(&[("c", "1")]))
        .await
        .unwrap();
    assert_eq!(clone.id, "memsnap-3");
    assert_eq!(
        (clone.digest.as_str(), clone.size_bytes),
        (s1.digest.as_str(), s1.size_bytes)
    );
    assert_eq!(clone.labels.get("c").map(String::as_str), Some("1"));
    let listed: Vec<String> = snaps
        .list_snapshots(&labels(&[("app", "x")]))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["memsnap-1", "memsnap-3"]);
    snaps.delete_snapshot(&s1.id).await.unwrap();
    snaps.delete_snapshot(&s1.id).await.unwrap();
    let gone = CreateRequest {
        snapshot: Some(s1.id.clone()),
        ..CreateRequest::default()
    };
    assert_eq!(
        b.create(gone).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    let from_clone = b
        .create(CreateRequest {
            snapshot: Some(clone.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap()
        .id;
    assert_eq!(
        f.read(&from_clone, &sp("/workspace/d/a")).await.unwrap(),
        b"A"
    );
    let err = b
        .snapshot_clone_ops()
        .unwrap()
        .clone_snapshot("memsnap-99", &Labels::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    assert_eq!(
        snaps
            .snapshot("mem-99", &Labels::new())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
}

#[tokio::test]
async fn pause_resume_and_usage() {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    let p = b.pause_ops().unwrap();
    p.pause(&id).await.unwrap();
    assert_eq!(b.connect(&id).await.unwrap().status, SandboxStatus::Paused);
    assert_eq!(b.native(&id).await.unwrap()["status"], "paused");
    p.resume(&id).await.unwrap();
    p.resume(&id).await.unwrap();
    assert_eq!(b.connect(&id).await.unwrap().status, SandboxStatus::Running);
    assert_eq!(
        p.pause("mem-42").await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    b.files()
        .write(&id, &sp("/workspace/a"), &[1; 10], None)
        .await
        .unwrap();
    b.files()
        .write(&id, &sp("/tmp/b"), &[1; 5], None)
        .await
        .unwrap();
    let u = b.usage_ops().unwrap().usage(&id).await.unwrap();
    assert_eq!(
        (u.disk_bytes, u.processes, u.cpu_ms),
        (Some(15), Some(0), None)
    );
}

/// An image is held only when the backend was opened with it: a create
/// naming another is `not_found` with the image named, never a sandbox
/// pretending to run it.
#[tokio::test]
async fn only_images_it_was_opened_with_are_held() {
    let b = MemoryBackend::new().with_image("python-3");
    let made = b
        .create(CreateRequest {
            image: Some("python-3".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(b.native(&made.id).await.unwrap()["image"], "python-3");
    let e = b
        .create(CreateRequest {
            image: Some("python-4".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound);
    assert!(e.message().contains("\"python-4\""), "{e}");
    assert!(matches!(
        e,
        BackendError::Create(CreateError::ImageNotFound { .. })
    ));
    assert_eq!(
        b.list(&Labels::new()).await.unwrap().len(),
        1,
        "nothing half-made"
    );
}
