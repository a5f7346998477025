//! The file primitives: exact modes, and no way out of the sandbox through
//! a symlink.

use crate::common;
use common::{backend, host_root, sandbox};
use corral_backend::contained::ContainmentReason;
use corral_backend::rules::sp;
use corral_backend::{Backend, ContainedReadFailure, ErrorCode, FileType};

#[tokio::test]
async fn write_sets_the_mode_exactly_and_replaces_atomically() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    let f = b.files();
    f.write(
        &info.id,
        &sp("/workspace/run.sh"),
        b"#!/bin/sh\necho ran\n",
        Some(0o755),
    )
    .await
    .unwrap();
    let st = f.stat(&info.id, &sp("/workspace/run.sh")).await.unwrap();
    assert_eq!(
        (st.file_type, st.mode, st.size),
        (FileType::File, 0o755, 19)
    );
    assert!(st.modified_at_ms > 0);
    let (status, out) = common::sh(&b, &info.id, "./run.sh").await;
    assert!(status.success());
    assert_eq!(out.stdout, b"ran\n");

    // Modes the umask would strip are kept; the default is 0644.
    f.write(&info.id, &sp("/workspace/open"), b"x", Some(0o777))
        .await
        .unwrap();
    assert_eq!(
        f.stat(&info.id, &sp("/workspace/open")).await.unwrap().mode,
        0o777
    );
    f.write(&info.id, &sp("/workspace/open"), b"yy", None)
        .await
        .unwrap();
    let st = f.stat(&info.id, &sp("/workspace/open")).await.unwrap();
    assert_eq!((st.mode, st.size), (0o644, 2));
    assert_eq!(
        f.read(&info.id, &sp("/workspace/open")).await.unwrap(),
        b"yy"
    );
    assert_eq!(
        f.write(&info.id, &sp("/workspace/bad"), b"x", Some(0o10000))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    // No temporary file is left beside it.
    let names: Vec<String> = f
        .list(&info.id, &sp("/workspace"))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec!["open", "run.sh"]);
    // Writing over a directory, or to /, is refused.
    f.mkdir(&info.id, &sp("/workspace/d"), false).await.unwrap();
    assert_eq!(
        f.write(&info.id, &sp("/workspace/d"), b"x", None)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.write(&info.id, &sp("/"), b"x", None)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.mkdir(&info.id, &sp("/workspace/d"), false)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::Conflict
    );
    assert_eq!(
        f.mkdir(&info.id, &sp("/workspace/open/sub"), true)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::Conflict
    );
    // Outside /workspace works too: the sandbox's / is its root directory.
    f.write(&info.id, &sp("/top.txt"), b"top", None)
        .await
        .unwrap();
    assert!(host_root(&dir, &info.id).join("top.txt").is_file());
    assert_eq!(
        f.read(&info.id, &sp("/../../top.txt")).await.unwrap(),
        b"top"
    );
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test]
async fn symlinks_never_lead_out_of_the_sandbox() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    let f = b.files();
    let root = host_root(&dir, &info.id);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"secret").unwrap();
    std::os::unix::fs::symlink("/etc", root.join("workspace/etc")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("workspace/out")).unwrap();
    std::os::unix::fs::symlink("../../../..", root.join("workspace/up")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), root.join("workspace/secret"))
        .unwrap();

    for path in [
        "/workspace/etc/passwd",
        "/workspace/out/secret",
        "/workspace/secret",
        "/workspace/up/etc/passwd",
    ] {
        let err = f.read(&info.id, &sp(path)).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "read {path}: {err}");
        assert!(
            !err.message().contains(outside.path().to_str().unwrap()),
            "{err}"
        );
        let err = f
            .ranged()
            .unwrap()
            .read_range(&info.id, &sp(path), 0, 10)
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            ErrorCode::InvalidInput,
            "read_range {path}: {err}"
        );
    }
    for path in [
        "/workspace/out/secret",
        "/workspace/out/new",
        "/workspace/up/new",
    ] {
        let err = f
            .write(&info.id, &sp(path), b"pwned", None)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "write {path}: {err}");
        assert_eq!(
            f.stat(&info.id, &sp(path)).await.unwrap_err().code(),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            f.list(&info.id, &sp(path)).await.unwrap_err().code(),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            f.mkdir(&info.id, &sp(&format!("{path}/d")), true)
                .await
                .unwrap_err()
                .code(),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            f.remove(&info.id, &sp(path), true)
                .await
                .unwrap_err()
                .code(),
            ErrorCode::InvalidInput
        );
    }
    assert_eq!(
        f.list(&info.id, &sp("/workspace/out"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        std::fs::read(outside.path().join("secret")).unwrap(),
        b"secret"
    );
    let outside_names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(outside_names.len(), 1, "nothing was written outside");

    // stat and list describe a symlink itself; writing to it replaces the link.
    let st = f.stat(&info.id, &sp("/workspace/secret")).await.unwrap();
    assert_eq!(st.file_type, FileType::Symlink);
    let listed = f.list(&info.id, &sp("/workspace")).await.unwrap();
    assert!(
        listed.iter().all(|e| e.file_type == FileType::Symlink),
        "{listed:?}"
    );
    f.write(&info.id, &sp("/workspace/secret"), b"mine", None)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(outside.path().join("secret")).unwrap(),
        b"secret"
    );
    assert_eq!(
        f.read(&info.id, &sp("/workspace/secret")).await.unwrap(),
        b"mine"
    );

    // Removing a symlink removes the link only, even recursively.
    f.remove(&info.id, &sp("/workspace/out"), true)
        .await
        .unwrap();
    f.remove(&info.id, &sp("/workspace/etc"), false)
        .await
        .unwrap();
    assert!(outside.path().join("secret").exists());
    assert!(std::path::Path::new("/etc/passwd").exists());
    assert_eq!(
        f.stat(&info.id, &sp("/workspace/out"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );

    // A symlink inside the sandbox is followed where it stays inside.
    f.mkdir(&info.id, &sp("/workspace/real"), false)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/real/a"), b"a", None)
        .await
        .unwrap();
    std::os::unix::fs::symlink("real", root.join("workspace/alias")).unwrap();
    assert_eq!(
        f.read(&info.id, &sp("/workspace/alias/a")).await.unwrap(),
        b"a"
    );
    f.write(&info.id, &sp("/workspace/alias/b"), b"b", None)
        .await
        .unwrap();
    assert_eq!(
        f.read(&info.id, &sp("/workspace/real/b")).await.unwrap(),
        b"b"
    );
    b.destroy(&info.id).await.unwrap();
    assert!(
        outside.path().join("secret").exists(),
        "destroy followed no symlink"
    );
}

#[tokio::test]
async fn list_remove_and_errors() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let f = b.files();
    f.mkdir(&info.id, &sp("/workspace/t/u"), true)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/t/u/f"), b"1", None)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/t/b"), b"22", Some(0o600))
        .await
        .unwrap();
    let listed = f.list(&info.id, &sp("/workspace/t")).await.unwrap();
    let summary: Vec<_> = listed
        .iter()
        .map(|e| (e.name.as_str(), e.path.as_str(), e.file_type, e.size))
        .collect();
    assert_eq!(
        summary[0],
        ("b", "/workspace/t/b", FileType::File, 2),
        "{summary:?}"
    );
    assert_eq!(summary[1].0, "u");
    assert_eq!(summary[1].2, FileType::Directory);
    assert_eq!(
        f.list(&info.id, &sp("/workspace/t/b"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.read(&info.id, &sp("/workspace/t"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.remove(&info.id, &sp("/workspace/t"), false)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::Conflict
    );
    f.remove(&info.id, &sp("/workspace/t"), true).await.unwrap();
    assert_eq!(
        f.list(&info.id, &sp("/workspace/t"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        f.remove(&info.id, &sp("/"), true).await.unwrap_err().code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.write(&info.id, &sp("/workspace/no/parent"), b"x", None)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        f.read("loc-0000000000000000", &sp("/workspace/x"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    let st = f.stat(&info.id, &sp("/")).await.unwrap();
    assert_eq!(st.file_type, FileType::Directory);
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test]
async fn contained_reads_stay_under_the_allowed_root() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    let f = b.files();
    let ops = b.contained_read_ops().unwrap();
    f.mkdir(&info.id, &sp("/workspace/src"), false)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/src/a.rs"), b"fn main() {}", None)
        .await
        .unwrap();
    f.write(&info.id, &sp("/top.txt"), b"top", None)
        .await
        .unwrap();
    let root = host_root(&dir, &info.id);
    std::os::unix::fs::symlink("../../top.txt", root.join("workspace/src/up")).unwrap();
    let got = ops
        .read_contained(&info.id, &sp("/workspace"), &sp("/workspace/src/a.rs"), 100)
        .await
        .unwrap();
    assert_eq!(got, b"fn main() {}");
    let reason = |r: Result<Vec<u8>, ContainedReadFailure>| match r {
        Err(ContainedReadFailure::Refused(e)) => e.reason,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        reason(
            ops.read_contained(&info.id, &sp("/workspace"), &sp("/top.txt"), 100)
                .await
        ),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason(
            ops.read_contained(&info.id, &sp("/workspace"), &sp("/workspace/src/up"), 100)
                .await
        ),
        ContainmentReason::OutsideRoot
    );
    // The same link is fine when the allowed root is the sandbox's /.
    assert_eq!(
        ops.read_contained(&info.id, &sp("/"), &sp("/workspace/src/up"), 100)
            .await
            .unwrap(),
        b"top"
    );
    assert!(matches!(
        reason(
            ops.read_contained(&info.id, &sp("/workspace"), &sp("/workspace/src/a.rs"), 3)
                .await
        ),
        ContainmentReason::TooLarge { .. }
    ));
    assert_eq!(
        reason(
            ops.read_contained(&info.id, &sp("/workspace"), &sp("/workspace/src"), 100)
                .await
        ),
        ContainmentReason::NotRegularFile {
            kind: corral_backend::contained::FileKind::Directory
        }
    );
    match ops
        .read_contained("loc-0000000000000000", &sp("/"), &sp("/x"), 1)
        .await
    {
        Err(ContainedReadFailure::Backend(e)) => assert_eq!(e.code(), ErrorCode::NotFound),
        other => panic!("{other:?}"),
    }
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test]
async fn usage_counts_the_bytes_written() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    b.files()
        .write(&info.id, &sp("/workspace/big"), &vec![7u8; 100_000], None)
        .await
        .unwrap();
    let usage = b.usage_ops().unwrap().usage(&info.id).await.unwrap();
    assert!(usage.disk_bytes.unwrap() >= 100_000, "{usage:?}");
    assert_eq!(
        (usage.cpu_ms, usage.memory_bytes, usage.processes),
        (None, None, None)
    );
    b.destroy(&info.id).await.unwrap();
}
