//! Snapshots of linux sandboxes: capture, restore through `create`, clone,
//! list, delete, and a tampered archive refused before anything is made.

use corral_backend::rules::sp;
use corral_backend::{Backend, CreateRequest, ErrorCode, Labels};
use corral_backend_linux::LinuxBackend;

use crate::common;
use common::{backend, sh};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied()).unwrap()
}

fn sandboxes(b: &LinuxBackend) -> usize {
    std::fs::read_dir(b.state_dir().join("sandboxes"))
        .unwrap()
        .count()
}

// Provider contract, `cloneSnapshot`: physically clone with a different id
// and no dependency on the source (the clone restores after the source is
// deleted); `destroySnapshot`: idempotent (the second delete succeeds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_image_snapshot_restores_files_modes_and_symlinks_and_clones() {
    let test = "a_host_image_snapshot_restores_files_modes_and_symlinks_and_clones";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let src = b.create(CreateRequest::default()).await.unwrap();
    sh(
        &b,
        &src.id,
        "mkdir -p /workspace/d/e && printf one > /workspace/d/e/f.txt \
         && printf secret > /root/s && chmod 600 /root/s \
         && ln -s d/e/f.txt /workspace/link && printf t > /tmp/t",
    )
    .await;
    let ops = b.snapshot_ops().unwrap();
    let snap = ops
        .snapshot(&src.id, &labels(&[("team", "a")]))
        .await
        .unwrap();
    assert!(snap.digest.starts_with("sha256:"), "{}", snap.digest);
    assert_eq!(snap.source_sandbox_id, src.id);
    let listed = ops.list_snapshots(&labels(&[("team", "a")])).await.unwrap();
    assert_eq!(listed, vec![snap.clone()]);
    assert!(
        ops.list_snapshots(&labels(&[("team", "b")]))
            .await
            .unwrap()
            .is_empty()
    );
    b.destroy(&src.id).await.unwrap();

    let restored = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let out = sh(
        &b,
        &restored.id,
        "cat /workspace/d/e/f.txt; echo; stat -c %a /root/s; readlink /workspace/link; \
         cat /tmp/t; echo; test -x /usr/bin/env && echo host-dirs-bound",
    )
    .await;
    assert_eq!(out, "one\n600\nd/e/f.txt\nt\nhost-dirs-bound\n");

    let clone = b
        .snapshot_clone_ops()
        .unwrap()
        .clone_snapshot(&snap.id, &labels(&[("copy", "yes")]))
        .await
        .unwrap();
    assert_ne!(clone.id, snap.id);
    assert_eq!(clone.digest, snap.digest);
    assert_eq!(clone.labels.get("team").map(String::as_str), Some("a"));
    ops.delete_snapshot(&snap.id).await.unwrap();
    ops.delete_snapshot(&snap.id).await.unwrap();
    let from_clone = b
        .create(CreateRequest {
            snapshot: Some(clone.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(
        b.files()
            .read(&from_clone.id, &sp("/workspace/d/e/f.txt"))
            .await
            .unwrap(),
        b"one"
    );
    let gone = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), ErrorCode::NotFound, "{gone}");
    ops.delete_snapshot(&clone.id).await.unwrap();
    assert!(ops.list_snapshots(&Labels::new()).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_snapshot_is_refused_before_anything_is_allocated() {
    let test = "a_tampered_snapshot_is_refused_before_anything_is_allocated";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let src = b.create(CreateRequest::default()).await.unwrap();
    b.files()
        .write(&src.id, &sp("/workspace/x"), b"x", None)
        .await
        .unwrap();
    let snap = b
        .snapshot_ops()
        .unwrap()
        .snapshot(&src.id, &Labels::new())
        .await
        .unwrap();
    b.destroy(&src.id).await.unwrap();
    let blob = b
        .state_dir()
        .join("snapshots")
        .join(&snap.id)
        .join(format!("{}.tar.zst", snap.digest.replace(':', "-")));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    let before = sandboxes(&b);
    let err = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Provider, "{err}");
    assert_eq!(sandboxes(&b), before, "nothing was allocated");
    let missing = b
        .create(CreateRequest {
            snapshot: Some("lnxsnap-0000000000000000".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), ErrorCode::NotFound, "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_larger_than_the_disk_limit_is_a_quota_error_and_leaves_nothing() {
    let test = "a_snapshot_larger_than_the_disk_limit_is_a_quota_error_and_leaves_nothing";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let src = b.create(CreateRequest::default()).await.unwrap();
    sh(&b, &src.id, "head -c 4194304 /dev/urandom > /workspace/big").await;
    let snap = b
        .snapshot_ops()
        .unwrap()
        .snapshot(&src.id, &Labels::new())
        .await
        .unwrap();
    b.destroy(&src.id).await.unwrap();
    let before = sandboxes(&b);
    let mut req = CreateRequest {
        snapshot: Some(snap.id.clone()),
        ..CreateRequest::default()
    };
    req.size.disk_bytes = Some(1 << 20);
    let err = b.create(req).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Quota, "{err}");
    assert_eq!(sandboxes(&b), before, "the half-made sandbox was torn down");
}

/// An OCI layout holding one layer: `hello.txt` and `d/keep.txt`.
fn layout(dir: &std::path::Path) {
    let mut layer = tar::Builder::new(Vec::new());
    let mut d = tar::Header::new_gnu();
    d.set_entry_type(tar::EntryType::Directory);
    d.set_size(0);
    d.set_mode(0o755);
    d.set_cksum();
    layer.append_data(&mut d, "d/", std::io::empty()).unwrap();
    for (name, body) in [("hello.txt", &b"hello\n"[..]), ("d/keep.txt", b"keep\n")] {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        layer.append_data(&mut h, name, body).unwrap();
    }
    common::one_layer_oci_layout(dir, "snapbase", &layer.into_inner().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layered_snapshot_keeps_deletions_and_replaced_directories() {
    let test = "a_layered_snapshot_keeps_deletions_and_replaced_directories";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let store = b.images().expect("the image store opens");
    let src_dir = tempfile::tempdir().unwrap();
    layout(src_dir.path());
    store.import(src_dir.path(), Some("snapbase")).unwrap();
    let src = b
        .create(CreateRequest {
            image: Some("snapbase".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let f = b.files();
    f.remove(&src.id, &sp("/hello.txt"), false).await.unwrap();
    f.remove(&src.id, &sp("/d"), true).await.unwrap();
    f.mkdir(&src.id, &sp("/d"), false).await.unwrap();
    f.write(&src.id, &sp("/d/new.txt"), b"new", None)
        .await
        .unwrap();
    let snap = b
        .snapshot_ops()
        .unwrap()
        .snapshot(&src.id, &Labels::new())
        .await
        .unwrap();
    b.destroy(&src.id).await.unwrap();
    let restored = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let err = f.read(&restored.id, &sp("/hello.txt")).await.unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NotFound,
        "the deletion was kept: {err}"
    );
    let err = f.read(&restored.id, &sp("/d/keep.txt")).await.unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NotFound,
        "the opaque dir was kept: {err}"
    );
    assert_eq!(
        f.read(&restored.id, &sp("/d/new.txt")).await.unwrap(),
        b"new"
    );
    let other = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            image: Some("host".into()),
            ..CreateRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(other.code(), ErrorCode::InvalidInput, "{other}");
    b.snapshot_ops()
        .unwrap()
        .delete_snapshot(&snap.id)
        .await
        .unwrap();
}
