//! The linux backend's contract primitives: contained reads, complete leaf
//! listings and all-or-nothing batch writes.

use corral_backend::contained::ContainmentReason;
use corral_backend::rules::sp;
use corral_backend::{
    Backend, BatchFile, ContainedReadFailure, CreateRequest, ErrorCode, TreeEntryKind,
};

use crate::common;
use common::{backend, sh};

fn reason(r: Result<Vec<u8>, ContainedReadFailure>) -> ContainmentReason {
    match r {
        Err(ContainedReadFailure::Refused(e)) => e.reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

// Provider contract, "Paths, mounts": containment must be physical, not
// textual — a read resolves to a descriptor beneath `allowed_root`, and a
// symlink escape is refused with the closed reason `outside_root`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contained_reads_stay_under_the_allowed_root() {
    let test = "contained_reads_stay_under_the_allowed_root";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let sb = b.create(CreateRequest::default()).await.unwrap();
    sh(
        &b,
        &sb.id,
        "mkdir -p /workspace/p && printf inside > /workspace/p/a && printf other > /root/o \
         && ln -s /root/o /workspace/p/abs && ln -s ../../root/o /workspace/p/rel \
         && ln -s a /workspace/p/ok",
    )
    .await;
    let ops = b.contained_read_ops().unwrap();
    let allowed = sp("/workspace/p");
    let read = |p: &'static str| {
        let (allowed, p) = (allowed.clone(), sp(p));
        let (ops, id) = (ops, sb.id.clone());
        async move { ops.read_contained(&id, &allowed, &p, 1 << 20).await }
    };
    assert_eq!(read("/workspace/p/a").await.unwrap(), b"inside");
    assert_eq!(read("/workspace/p/ok").await.unwrap(), b"inside");
    assert_eq!(
        reason(read("/root/o").await),
        ContainmentReason::OutsideRoot
    );
    assert_eq!(
        reason(read("/workspace/p/../../root/o").await),
        ContainmentReason::OutsideRoot
    );
    assert!(read("/workspace/p/rel").await.is_err(), "a relative escape");
    assert!(
        read("/workspace/p/abs").await.is_err(),
        "an absolute escape"
    );
    assert_eq!(
        reason(read("/workspace/p/none").await),
        ContainmentReason::NotFound
    );
    let small = ops
        .read_contained(&sb.id, &sp("/workspace"), &sp("/workspace/p/a"), 3)
        .await;
    assert!(
        matches!(reason(small), ContainmentReason::TooLarge { .. }),
        "max_bytes is a bound"
    );
    let gone = ops
        .read_contained("lnx-0000000000000000", &sp("/"), &sp("/x"), 1)
        .await;
    assert!(
        matches!(gone, Err(ContainedReadFailure::Backend(e)) if e.code() == ErrorCode::NotFound)
    );
}

// Provider contract, `listProjectDir`: complete leaf enumeration — special
// files named, never omitted; the listing is `complete: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_listing_names_every_leaf() {
    let test = "a_tree_listing_names_every_leaf";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let sb = b.create(CreateRequest::default()).await.unwrap();
    sh(
        &b,
        &sb.id,
        "mkdir -p /workspace/t/src /workspace/t/sub/deep /workspace/t/empty \
         && printf abc > /workspace/t/src/a.txt && printf x > /workspace/t/sub/.git \
         && printf y > /workspace/t/sub/deep/hidden && ln -s src/a.txt /workspace/t/link \
         && mkfifo /workspace/t/pipe",
    )
    .await;
    let ops = b.tree_list_ops().unwrap();
    let listing = ops
        .list_tree(&sb.id, &sp("/workspace/t"), 100)
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
    assert_eq!(
        got,
        vec![
            ("link", &TreeEntryKind::Symlink),
            ("pipe", &TreeEntryKind::Fifo),
            ("src/a.txt", &abc),
            ("sub", &TreeEntryKind::Submodule),
        ]
    );
    let cut = ops.list_tree(&sb.id, &sp("/workspace/t"), 2).await.unwrap();
    assert!(!cut.complete);
    assert_eq!(cut.entries.len(), 2);
    let err = ops
        .list_tree(&sb.id, &sp("/workspace/t/src/a.txt"), 10)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    let err = ops.list_tree(&sb.id, &sp("/nope"), 10).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
}

fn file(path: &str, bytes: &[u8], mode: Option<u32>) -> BatchFile {
    BatchFile {
        path: sp(path),
        bytes: bytes.to_vec(),
        mode,
    }
}

// Provider contract, `beginActiveWrite`: stage and atomically publish a
// bounded regular-file batch — every file or none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_write_publishes_every_file_or_none() {
    let test = "a_batch_write_publishes_every_file_or_none";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let sb = b.create(CreateRequest::default()).await.unwrap();
    let ops = b.batch_write_ops().unwrap();
    let f = b.files();
    f.write(&sb.id, &sp("/workspace/old"), b"before", None)
        .await
        .unwrap();
    ops.write_batch(
        &sb.id,
        vec![
            file("/workspace/old", b"after", None),
            file("/workspace/new/dir/x.sh", b"#!/bin/sh\n", Some(0o755)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        f.read(&sb.id, &sp("/workspace/old")).await.unwrap(),
        b"after"
    );
    let st = f
        .stat(&sb.id, &sp("/workspace/new/dir/x.sh"))
        .await
        .unwrap();
    assert_eq!(st.mode & 0o777, 0o755);

    // The second file cannot be written (its path is a directory): nothing is.
    let err = ops
        .write_batch(
            &sb.id,
            vec![
                file("/workspace/old", b"never", None),
                file("/workspace/fresh/y", b"never", None),
                file("/workspace/new", b"never", None),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    assert_eq!(
        f.read(&sb.id, &sp("/workspace/old")).await.unwrap(),
        b"after"
    );
    let fresh = f.stat(&sb.id, &sp("/workspace/fresh")).await.unwrap_err();
    assert_eq!(
        fresh.code(),
        ErrorCode::NotFound,
        "made directories are removed"
    );
    let names: Vec<String> = f
        .list(&sb.id, &sp("/workspace"))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".corral-")),
        "nothing staged is left: {names:?}"
    );
    let dup = ops
        .write_batch(
            &sb.id,
            vec![
                file("/workspace/a", b"1", None),
                file("/workspace/a", b"2", None),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(dup.code(), ErrorCode::InvalidInput, "{dup}");
}
