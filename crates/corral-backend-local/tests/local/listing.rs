//! Complete leaf listings.

use crate::common;
use common::{backend, host_root, sandbox};
use corral_backend::rules::sp;
use corral_backend::{Backend, ErrorCode, TreeEntryKind};

#[tokio::test]
async fn list_tree_names_every_leaf() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    let f = b.files();
    f.mkdir(&info.id, &sp("/workspace/src/deep"), true)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/src/deep/a.txt"), b"abc", None)
        .await
        .unwrap();
    f.write(&info.id, &sp("/workspace/src.txt"), b"", None)
        .await
        .unwrap();
    f.mkdir(&info.id, &sp("/workspace/empty"), false)
        .await
        .unwrap();
    f.mkdir(&info.id, &sp("/workspace/vendor/sub"), true)
        .await
        .unwrap();
    f.write(
        &info.id,
        &sp("/workspace/vendor/sub/.git"),
        b"gitdir: ../../.git/modules/sub\n",
        None,
    )
    .await
    .unwrap();
    f.write(
        &info.id,
        &sp("/workspace/vendor/sub/hidden.txt"),
        b"not listed",
        None,
    )
    .await
    .unwrap();
    let root = host_root(&dir, &info.id);
    std::os::unix::fs::symlink("/etc", root.join("workspace/etc")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(root.join("workspace/sock")).unwrap();
    let (status, _) = common::sh(&b, &info.id, "mkfifo fifo").await;
    assert!(status.success());

    let ops = b.tree_list_ops().unwrap();
    let listing = ops
        .list_tree(&info.id, &sp("/workspace"), 100)
        .await
        .unwrap();
    assert!(listing.complete);
    let got: Vec<(&str, &TreeEntryKind)> = listing
        .entries
        .iter()
        .map(|e| (e.path.as_str(), &e.kind))
        .collect();
    let abc = TreeEntryKind::File {
        size: 3,
        sha256: "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into(),
    };
    let empty = TreeEntryKind::File {
        size: 0,
        sha256: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into(),
    };
    assert_eq!(
        got,
        vec![
            ("etc", &TreeEntryKind::Symlink),
            ("fifo", &TreeEntryKind::Fifo),
            ("sock", &TreeEntryKind::Socket),
            ("src.txt", &empty),
            ("src/deep/a.txt", &abc),
            ("vendor/sub", &TreeEntryKind::Submodule),
        ]
    );

    let partial = ops.list_tree(&info.id, &sp("/workspace"), 2).await.unwrap();
    assert!(!partial.complete);
    assert_eq!(partial.entries.len(), 2);
    let exact = ops
        .list_tree(&info.id, &sp("/workspace/src"), 1)
        .await
        .unwrap();
    assert!(exact.complete, "exactly max_entries leaves is complete");
    assert_eq!(exact.entries[0].path, "deep/a.txt");

    assert_eq!(
        ops.list_tree(&info.id, &sp("/workspace/etc"), 10)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        ops.list_tree(&info.id, &sp("/workspace/src.txt"), 10)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        ops.list_tree(&info.id, &sp("/workspace/none"), 10)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    b.destroy(&info.id).await.unwrap();
}
