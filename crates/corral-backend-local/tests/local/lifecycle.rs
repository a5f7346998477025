//! Create, find, list, connect and destroy, across instances and processes'
//! worth of state; exact keys; fail-closed creates.

use crate::common;
use std::time::Duration;

use common::{backend, labels, sandbox_dirs};
use corral_backend::{Backend, CreateRequest, ErrorCode, KeyMode, Network, SignalName};
use corral_backend_local::LocalBackend;

#[tokio::test]
async fn two_instances_share_one_state_dir() {
    let (dir, a) = backend();
    let b = LocalBackend::open(dir.path()).unwrap();
    let mut env = corral_backend::Environment::new();
    env.insert(corral_backend::EnvKey::new("GREETING").unwrap(), "hello")
        .unwrap();
    let info = a
        .create(CreateRequest {
            labels: labels("share"),
            key: Some("shared key/with spaces".try_into().unwrap()),
            env,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert!(info.id.starts_with("loc-"), "{}", info.id);
    assert_eq!(info.backend, "local");
    assert_eq!(b.key_mode(), KeyMode::Exact);

    let found = b
        .find(&"shared key/with spaces".try_into().unwrap())
        .await
        .unwrap()
        .expect("found by the other instance");
    assert_eq!(found.id, info.id);
    assert_eq!(found.labels, labels("share"));
    assert!(
        b.find(&"other key".try_into().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(b.connect(&info.id).await.unwrap(), info);
    assert_eq!(b.list(&labels("share")).await.unwrap(), vec![info.clone()]);
    assert!(b.list(&labels("nothing")).await.unwrap().is_empty());
    assert_eq!(b.list(&Default::default()).await.unwrap().len(), 1);

    // The other instance runs commands with the create-time environment.
    let (status, out) = common::sh(&b, &info.id, "echo $GREETING; pwd").await;
    assert!(status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("hello\n"), "{text}");
    assert!(text.trim_end().ends_with("/root/workspace"), "{text}");

    b.destroy(&info.id).await.unwrap();
    assert_eq!(
        a.connect(&info.id).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert!(
        a.find(&"shared key/with spaces".try_into().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    assert!(a.list(&labels("share")).await.unwrap().is_empty());
    assert!(sandbox_dirs(&dir).is_empty(), "{:?}", sandbox_dirs(&dir));
    // The key is free again.
    let again = a
        .create(CreateRequest {
            key: Some("shared key/with spaces".try_into().unwrap()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_ne!(again.id, info.id);
    a.destroy(&again.id).await.unwrap();
    a.destroy(&again.id).await.unwrap();
    a.destroy("never-existed").await.unwrap();
    a.destroy("loc-../../etc").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_with_one_key_have_one_winner() {
    for round in 0..10 {
        let (dir, a) = backend();
        let b = LocalBackend::open(dir.path()).unwrap();
        let req = CreateRequest {
            key: Some(format!("race-{round}").try_into().unwrap()),
            ..CreateRequest::default()
        };
        let (ra, rb) = tokio::join!(a.create(req.clone()), b.create(req.clone()));
        let (winner, loser) = match (ra, rb) {
            (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
            (ra, rb) => panic!("round {round}: expected one winner, got {ra:?} and {rb:?}"),
        };
        assert_eq!(loser.code(), ErrorCode::Conflict, "{loser}");
        assert_eq!(a.list(&Default::default()).await.unwrap().len(), 1);
        assert_eq!(
            sandbox_dirs(&dir),
            vec![winner.id.clone()],
            "the loser rolled back"
        );
        assert_eq!(
            b.find(&format!("race-{round}").try_into().unwrap())
                .await
                .unwrap()
                .unwrap()
                .id,
            winner.id
        );
    }
}

#[tokio::test]
async fn creates_it_cannot_enforce_fail_closed_and_leave_nothing() {
    let (dir, b) = backend();
    let mut cases: Vec<(&str, CreateRequest)> = Vec::new();
    if !b.capabilities().enforces.network_none {
        cases.push((
            "network none",
            CreateRequest {
                network: Network::None,
                ..Default::default()
            },
        ));
    }
    let mut r = CreateRequest::default();
    r.size.memory_bytes = Some(1 << 30);
    cases.push(("memory", r));
    let mut r = CreateRequest::default();
    r.size.cpus = Some(1.0);
    cases.push(("cpus", r));
    let mut r = CreateRequest::default();
    r.size.disk_bytes = Some(1 << 30);
    cases.push(("disk", r));
    let mut r = CreateRequest::default();
    r.limits.pids = Some(10);
    cases.push(("pids", r));
    cases.push((
        "idle timeout",
        CreateRequest {
            idle_timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    ));
    cases.push((
        "timeout",
        CreateRequest {
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    ));
    cases.push((
        "ports without network",
        CreateRequest {
            ports: vec![8080],
            network: Network::None,
            ..Default::default()
        },
    ));
    cases.push((
        "image",
        CreateRequest {
            image: Some("alpine".into()),
            ..Default::default()
        },
    ));
    for (what, mut req) in cases {
        req.key = Some(format!("key-{what}").try_into().unwrap());
        let err = b.create(req).await.expect_err(what);
        assert_eq!(err.code(), ErrorCode::Unsupported, "{what}: {err}");
        assert!(
            sandbox_dirs(&dir).is_empty(),
            "{what}: {:?}",
            sandbox_dirs(&dir)
        );
        assert!(
            b.find(&format!("key-{what}").try_into().unwrap())
                .await
                .unwrap()
                .is_none(),
            "{what}"
        );
    }
    let keys: Vec<_> = std::fs::read_dir(dir.path().join("keys"))
        .unwrap()
        .collect();
    assert!(keys.is_empty(), "no key claim left behind");
    let err = b
        .create(CreateRequest {
            snapshot: Some("locsnap-0000000000000000".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert!(sandbox_dirs(&dir).is_empty());
}

#[tokio::test]
async fn half_created_sandboxes_are_invisible_and_destroyable() {
    let (dir, b) = backend();
    let id = "loc-00000000000000aa";
    let sdir = dir.path().join("sandboxes").join(id);
    std::fs::create_dir_all(sdir.join("root/workspace")).unwrap();
    assert!(b.list(&Default::default()).await.unwrap().is_empty());
    assert_eq!(b.connect(id).await.unwrap_err().code(), ErrorCode::NotFound);
    b.destroy(id).await.unwrap();
    assert!(!sdir.exists());

    // The sweep finds the ones nobody knows the id of, once they are old enough.
    std::fs::create_dir_all(sdir.join("root")).unwrap();
    let complete = common::sandbox(&b).await;
    std::fs::create_dir_all(
        dir.path()
            .join("sandboxes/.trash-loc-00000000000000bb-x/root/a"),
    )
    .unwrap();
    assert!(
        b.sweep_incomplete(Duration::from_secs(3600))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(sdir.exists());
    assert_eq!(
        b.sweep_incomplete(Duration::ZERO).await.unwrap(),
        vec![id.to_string()]
    );
    assert_eq!(sandbox_dirs(&dir), vec![complete.id.clone()]);
    b.destroy(&complete.id).await.unwrap();

    // A half-created sandbox holding a key claim releases it on destroy.
    let info = b
        .create(CreateRequest {
            key: Some("k".try_into().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    std::fs::remove_file(
        dir.path()
            .join("sandboxes")
            .join(&info.id)
            .join("meta.json"),
    )
    .unwrap();
    assert!(b.find(&"k".try_into().unwrap()).await.unwrap().is_none());
    assert_eq!(
        b.create(CreateRequest {
            key: Some("k".try_into().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap_err()
        .code(),
        ErrorCode::Conflict
    );
    b.destroy(&info.id).await.unwrap();
    let again = b
        .create(CreateRequest {
            key: Some("k".try_into().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap();
    b.destroy(&again.id).await.unwrap();
}

#[tokio::test]
async fn destroy_removes_locked_down_trees_and_kills_live_processes() {
    let (dir, b) = backend();
    let info = common::sandbox(&b).await;
    let (status, _) = common::sh(
        &b,
        &info.id,
        "mkdir -p a/b && touch a/b/f && chmod 000 a/b && chmod 500 a",
    )
    .await;
    assert!(status.success());
    let ops = corral_backend::Backend::process_ops(&b).unwrap();
    let p = ops
        .start_process(
            &info.id,
            corral_backend::ProcessSpec::new(
                corral_backend::Command::argv(["sleep", "30"]).unwrap(),
            ),
        )
        .await
        .unwrap();
    b.destroy(&info.id).await.unwrap();
    assert!(sandbox_dirs(&dir).is_empty(), "{:?}", sandbox_dirs(&dir));
    let status = tokio::time::timeout(Duration::from_secs(5), p.control.wait())
        .await
        .expect("the live process died with its sandbox")
        .unwrap();
    assert_eq!(
        status,
        corral_backend::ExitStatus::Signal(SignalName::Sigkill)
    );
}

#[tokio::test]
async fn native_and_preview() {
    let (dir, b) = backend();
    let info = common::sandbox(&b).await;
    let native = b.native(&info.id).await.unwrap();
    assert_eq!(native["id"], info.id.as_str());
    let root = native["root"].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(root),
        common::host_root(&dir, &info.id)
    );
    // A port not declared at create has no preview (tests/preview.rs has the rest).
    assert_eq!(
        b.preview_url(&info.id, 80).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        b.native("loc-0000000000000000").await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    b.destroy(&info.id).await.unwrap();
}
