//! Snapshots: round trips, corruption, clones.

use crate::common;
use common::{backend, host_root, sandbox, sandbox_dirs};
use corral_backend::rules::sp;
use corral_backend::{Backend, CreateRequest, ErrorCode, FileType, Labels};

#[tokio::test]
async fn snapshot_restores_files_modes_and_symlinks() {
    let (dir, b) = backend();
    let info = b
        .create(CreateRequest {
            labels: common::labels("snap"),
            ..Default::default()
        })
        .await
        .unwrap();
    let f = b.files();
    f.mkdir(&info.id, &sp("/workspace/bin"), false)
        .await
        .unwrap();
    f.write(
        &info.id,
        &sp("/workspace/bin/tool"),
        b"#!/bin/sh\necho tool\n",
        Some(0o755),
    )
    .await
    .unwrap();
    f.write(&info.id, &sp("/workspace/private"), b"p", Some(0o600))
        .await
        .unwrap();
    f.write(&info.id, &sp("/etc-like.conf"), b"conf", None)
        .await
        .unwrap();
    let long = "d".repeat(120);
    f.mkdir(&info.id, &sp(&format!("/workspace/{long}/{long}")), true)
        .await
        .unwrap();
    f.write(
        &info.id,
        &sp(&format!("/workspace/{long}/{long}/deep.txt")),
        b"deep",
        None,
    )
    .await
    .unwrap();
    let root = host_root(&dir, &info.id);
    std::os::unix::fs::symlink("bin/tool", root.join("workspace/link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("workspace/abs")).unwrap();
    let (status, _) = common::sh(&b, &info.id, "mkfifo pipe && mkdir ro && chmod 555 ro").await;
    assert!(status.success());

    let ops = b.snapshot_ops().unwrap();
    let mut extra = Labels::new();
    extra.insert("kind", "test").unwrap();
    let snap = ops.snapshot(&info.id, &extra).await.unwrap();
    assert!(snap.id.starts_with("locsnap-"), "{}", snap.id);
    assert!(
        snap.digest.starts_with("sha256:") && snap.digest.len() == 71,
        "{}",
        snap.digest
    );
    assert_eq!(snap.source_sandbox_id, info.id);
    assert_eq!(snap.labels.get("kind").map(String::as_str), Some("test"));
    assert_eq!(snap.labels.get("test").map(String::as_str), Some("snap"));
    assert!(snap.size_bytes > 0);
    assert_eq!(
        ops.list_snapshots(&extra).await.unwrap(),
        vec![snap.clone()]
    );

    // The source changes afterwards; the restore shows the captured state.
    f.write(&info.id, &sp("/workspace/private"), b"changed", None)
        .await
        .unwrap();
    let restored = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let id = &restored.id;
    assert_eq!(
        f.read(id, &sp("/workspace/bin/tool")).await.unwrap(),
        b"#!/bin/sh\necho tool\n"
    );
    assert_eq!(
        f.stat(id, &sp("/workspace/bin/tool")).await.unwrap().mode,
        0o755
    );
    assert_eq!(f.read(id, &sp("/workspace/private")).await.unwrap(), b"p");
    assert_eq!(
        f.stat(id, &sp("/workspace/private")).await.unwrap().mode,
        0o600
    );
    assert_eq!(f.read(id, &sp("/etc-like.conf")).await.unwrap(), b"conf");
    assert_eq!(
        f.read(id, &sp(&format!("/workspace/{long}/{long}/deep.txt")))
            .await
            .unwrap(),
        b"deep"
    );
    let link = f.stat(id, &sp("/workspace/link")).await.unwrap();
    assert_eq!(link.file_type, FileType::Symlink);
    assert_eq!(
        f.read(id, &sp("/workspace/link")).await.unwrap(),
        b"#!/bin/sh\necho tool\n"
    );
    let target = std::fs::read_link(host_root(&dir, id).join("workspace/abs")).unwrap();
    assert_eq!(target, std::path::Path::new("/etc/passwd"));
    assert_eq!(
        f.stat(id, &sp("/workspace/pipe")).await.unwrap().file_type,
        FileType::Fifo
    );
    let ro = f.stat(id, &sp("/workspace/ro")).await.unwrap();
    assert_eq!((ro.file_type, ro.mode), (FileType::Directory, 0o555));
    let (status, out) = common::sh(&b, id, "./link").await;
    assert!(status.success());
    assert_eq!(out.stdout, b"tool\n");

    b.destroy(id).await.unwrap();
    b.destroy(&info.id).await.unwrap();
    ops.delete_snapshot(&snap.id).await.unwrap();
    ops.delete_snapshot(&snap.id).await.unwrap();
    assert!(ops.list_snapshots(&Labels::new()).await.unwrap().is_empty());
    let err = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert!(sandbox_dirs(&dir).is_empty());
}

#[tokio::test]
async fn a_corrupted_snapshot_is_refused_and_nothing_is_created() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    b.files()
        .write(&info.id, &sp("/workspace/a"), &vec![1u8; 10_000], None)
        .await
        .unwrap();
    let snap = b
        .snapshot_ops()
        .unwrap()
        .snapshot(&info.id, &Labels::new())
        .await
        .unwrap();
    b.destroy(&info.id).await.unwrap();
    let blob = dir
        .path()
        .join("snapshots")
        .join(format!("{}.tar.zst", snap.id));
    let mut bytes = std::fs::read(&blob).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let err = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            key: Some("restored".try_into().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Provider, "{err}");
    assert!(sandbox_dirs(&dir).is_empty(), "{:?}", sandbox_dirs(&dir));
    assert!(
        b.find(&"restored".try_into().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let err = b
        .snapshot_clone_ops()
        .unwrap()
        .clone_snapshot(&snap.id, &Labels::new())
        .await;
    assert_eq!(err.unwrap_err().code(), ErrorCode::Provider);
    assert_eq!(
        b.snapshot_ops()
            .unwrap()
            .list_snapshots(&Labels::new())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_clone_is_independent_of_its_source() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    b.files()
        .write(&info.id, &sp("/workspace/x"), b"x", None)
        .await
        .unwrap();
    let ops = b.snapshot_ops().unwrap();
    let snap = ops.snapshot(&info.id, &Labels::new()).await.unwrap();
    let mut l = Labels::new();
    l.insert("clone", "yes").unwrap();
    let clone = b
        .snapshot_clone_ops()
        .unwrap()
        .clone_snapshot(&snap.id, &l)
        .await
        .unwrap();
    assert_ne!(clone.id, snap.id);
    assert_eq!(clone.digest, snap.digest);
    assert_eq!(clone.size_bytes, snap.size_bytes);
    assert_eq!(ops.list_snapshots(&l).await.unwrap(), vec![clone.clone()]);
    ops.delete_snapshot(&snap.id).await.unwrap();
    let restored = b
        .create(CreateRequest {
            snapshot: Some(clone.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        b.files()
            .read(&restored.id, &sp("/workspace/x"))
            .await
            .unwrap(),
        b"x"
    );
    assert_eq!(
        b.snapshot_clone_ops()
            .unwrap()
            .clone_snapshot(&snap.id, &l)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    b.destroy(&restored.id).await.unwrap();
    b.destroy(&info.id).await.unwrap();
}

/// Writes a hand-made archive into the state directory as snapshot `id`,
/// with a correct digest: only the unpacking rules stand in its way.
fn plant_snapshot(
    state: &std::path::Path,
    id: &str,
    build: impl FnOnce(&mut tar::Builder<Vec<u8>>),
) {
    use sha2::Digest;
    let mut builder = tar::Builder::new(Vec::new());
    build(&mut builder);
    let tar_bytes = builder.into_inner().unwrap();
    let compressed = zstd::encode_all(&tar_bytes[..], 3).unwrap();
    let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&compressed)));
    let snaps = state.join("snapshots");
    std::fs::write(snaps.join(format!("{id}.tar.zst")), &compressed).unwrap();
    let info = corral_backend::SnapshotInfo {
        id: id.into(),
        source_sandbox_id: "loc-0000000000000000".into(),
        digest,
        size_bytes: compressed.len() as u64,
        created_at_ms: 1,
        labels: Labels::new(),
    };
    std::fs::write(
        snaps.join(format!("{id}.json")),
        serde_json::to_vec(&info).unwrap(),
    )
    .unwrap();
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    h
}

#[tokio::test]
async fn hostile_archives_cannot_write_outside() {
    let (dir, b) = backend();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().to_path_buf();
    type Build = Box<dyn FnOnce(&mut tar::Builder<Vec<u8>>)>;
    let cases: Vec<(&str, Build)> = vec![
        (
            "file through a symlink",
            Box::new({
                let out = out.clone();
                move |t| {
                    t.append_link(&mut header(tar::EntryType::Symlink, 0), "esc", &out)
                        .unwrap();
                    t.append_data(
                        &mut header(tar::EntryType::Regular, 2),
                        "esc/pwned",
                        &b"hi"[..],
                    )
                    .unwrap();
                }
            }),
        ),
        (
            "fifo through a symlink",
            Box::new({
                let out = out.clone();
                move |t| {
                    t.append_link(&mut header(tar::EntryType::Symlink, 0), "esc", &out)
                        .unwrap();
                    t.append_data(
                        &mut header(tar::EntryType::Fifo, 0),
                        "esc/pwned",
                        std::io::empty(),
                    )
                    .unwrap();
                }
            }),
        ),
        (
            "file over a symlink",
            Box::new({
                let target = out.join("pwned");
                move |t| {
                    t.append_link(&mut header(tar::EntryType::Symlink, 0), "f", &target)
                        .unwrap();
                    t.append_data(&mut header(tar::EntryType::Regular, 2), "f", &b"hi"[..])
                        .unwrap();
                }
            }),
        ),
        (
            "hard link",
            Box::new(|t| {
                t.append_link(&mut header(tar::EntryType::Link, 0), "h", "/etc/passwd")
                    .unwrap();
            }),
        ),
        (
            "device",
            Box::new(|t| {
                t.append_data(
                    &mut header(tar::EntryType::Char, 0),
                    "null",
                    std::io::empty(),
                )
                .unwrap();
            }),
        ),
    ];
    for (i, (what, build)) in cases.into_iter().enumerate() {
        let id = format!("locsnap-{i:016x}");
        plant_snapshot(dir.path(), &id, build);
        let err = b
            .create(CreateRequest {
                snapshot: Some(id),
                ..Default::default()
            })
            .await
            .expect_err(what);
        assert_eq!(err.code(), ErrorCode::Provider, "{what}: {err}");
        let state = dir.path().to_string_lossy().into_owned();
        assert!(
            !err.message().contains(&state),
            "{what}: leaks the host layout: {err}"
        );
        assert!(
            sandbox_dirs(&dir).is_empty(),
            "{what}: {:?}",
            sandbox_dirs(&dir)
        );
        let leaked: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(leaked.is_empty(), "{what}: wrote outside: {leaked:?}");
    }
}
