//! Contained reads, complete listings and atomic batches over the in-memory tree.

use corral_backend::contained::{ContainmentReason, FileKind};
use corral_backend::rules::sp;
use corral_backend::{
    Backend, BatchFile, ContainedReadFailure, CreateRequest, ErrorCode, TreeEntryKind,
};
use corral_backend_memory::{MemoryBackend, SpecialKind};

async fn setup() -> (MemoryBackend, String) {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    let f = b.files();
    f.write(&id, &sp("/secret"), b"top secret", None)
        .await
        .unwrap();
    f.mkdir(&id, &sp("/workspace/src/deep"), true)
        .await
        .unwrap();
    f.write(&id, &sp("/workspace/src/a.rs"), b"fn main() {}", None)
        .await
        .unwrap();
    f.write(&id, &sp("/workspace/src/deep/b.txt"), b"bee", None)
        .await
        .unwrap();
    f.mkdir(&id, &sp("/workspace2"), false).await.unwrap();
    f.write(&id, &sp("/workspace2/x"), b"sibling", None)
        .await
        .unwrap();
    b.symlink(&id, &sp("/workspace/up"), "../secret").unwrap();
    b.symlink(&id, &sp("/workspace/src/deep/upup"), "../../../secret")
        .unwrap();
    b.symlink(&id, &sp("/workspace/abs"), "/workspace/src/a.rs")
        .unwrap();
    b.symlink(&id, &sp("/workspace/rel"), "src/deep/../a.rs")
        .unwrap();
    b.symlink(&id, &sp("/workspace/src/dirlink"), "deep")
        .unwrap();
    b.symlink(&id, &sp("/workspace/dangling"), "nothing")
        .unwrap();
    b.symlink(&id, &sp("/workspace/loop1"), "loop2").unwrap();
    b.symlink(&id, &sp("/workspace/loop2"), "loop1").unwrap();
    b.symlink(&id, &sp("/workspace/climb"), "src/../../secret")
        .unwrap();
    b.mkfifo(&id, &sp("/workspace/fifo")).unwrap();
    b.mknod(&id, &sp("/workspace/sock"), SpecialKind::Socket)
        .unwrap();
    b.mknod(&id, &sp("/workspace/null"), SpecialKind::CharDevice)
        .unwrap();
    b.symlink(&id, &sp("/workspace/to-fifo"), "fifo").unwrap();
    (b, id)
}

enum Want {
    Bytes(&'static [u8]),
    Reason(ContainmentReason),
    Code(ErrorCode),
}

#[tokio::test]
async fn hostile_paths_are_refused_inside_the_tree() {
    let (b, id) = setup().await;
    let ops = b.contained_read_ops().unwrap();
    use ContainmentReason as R;
    use Want::*;
    let table: &[(&str, &str, Want)] = &[
        ("/workspace", "/workspace/src/a.rs", Bytes(b"fn main() {}")),
        ("/workspace", "/workspace/./src//deep/b.txt", Bytes(b"bee")),
        ("/workspace", "/workspace/src/dirlink/b.txt", Bytes(b"bee")),
        ("/workspace", "/workspace/rel", Bytes(b"fn main() {}")),
        (
            "/workspace/",
            "/workspace/src/x/../a.rs",
            Bytes(b"fn main() {}"),
        ),
        ("/workspace", "/workspace/../secret", Reason(R::OutsideRoot)),
        ("/workspace", "/secret", Reason(R::OutsideRoot)),
        ("/workspace", "/workspace2/x", Reason(R::OutsideRoot)),
        (
            "/workspace/src",
            "/workspace/src/../../secret",
            Reason(R::OutsideRoot),
        ),
        ("/workspace", "/workspace/up", Reason(R::OutsideRoot)),
        (
            "/workspace",
            "/workspace/src/deep/upup",
            Reason(R::OutsideRoot),
        ),
        ("/workspace", "/workspace/climb", Reason(R::OutsideRoot)),
        ("/workspace", "/workspace/abs", Reason(R::OutsideRoot)),
        (
            "/workspace/src",
            "/workspace/src/deep/upup",
            Reason(R::OutsideRoot),
        ),
        ("/", "/workspace/up", Bytes(b"top secret")),
        ("/", "/workspace/climb", Bytes(b"top secret")),
        ("/workspace", "/workspace/dangling", Reason(R::NotFound)),
        ("/workspace", "/workspace/missing", Reason(R::NotFound)),
        ("/workspace", "/workspace/src/a.rs/x", Reason(R::NotFound)),
        ("/workspace", "/workspace/loop1", Reason(R::SymlinkLoop)),
        (
            "/workspace",
            "/workspace",
            Reason(R::NotRegularFile {
                kind: FileKind::Directory,
            }),
        ),
        (
            "/workspace",
            "/workspace/src",
            Reason(R::NotRegularFile {
                kind: FileKind::Directory,
            }),
        ),
        (
            "/workspace",
            "/workspace/fifo",
            Reason(R::NotRegularFile {
                kind: FileKind::Fifo,
            }),
        ),
        (
            "/workspace",
            "/workspace/to-fifo",
            Reason(R::NotRegularFile {
                kind: FileKind::Fifo,
            }),
        ),
        (
            "/workspace",
            "/workspace/sock",
            Reason(R::NotRegularFile {
                kind: FileKind::Socket,
            }),
        ),
        (
            "/workspace",
            "/workspace/null",
            Reason(R::NotRegularFile {
                kind: FileKind::CharDevice,
            }),
        ),
        ("/nope", "/nope/x", Reason(R::NotFound)),
        (
            "/workspace/src/a.rs",
            "/workspace/src/a.rs",
            Reason(R::NotFound),
        ),
        ("/workspace", "relative", Code(ErrorCode::InvalidInput)),
        (
            "/workspace",
            "/workspace/a\0b",
            Code(ErrorCode::InvalidInput),
        ),
    ];
    for (root, path, want) in table {
        // A malformed path is refused where the sandbox path is made, with
        // the same code, before any read.
        let (root_path, sandbox_path) = match (
            corral_backend::sandbox_path("allowed_root", root),
            corral_backend::sandbox_path("path", path),
        ) {
            (Ok(r), Ok(p)) => (r, p),
            (Err(e), _) | (_, Err(e)) => {
                assert!(
                    matches!(want, Code(c) if *c == e.code()),
                    "{root} {path:?}: {e}"
                );
                continue;
            }
        };
        let got = ops
            .read_contained(&id, &root_path, &sandbox_path, 1 << 20)
            .await;
        match (want, got) {
            (Bytes(b), Ok(got)) => assert_eq!(&got, b, "{root} {path:?}"),
            (Reason(r), Err(ContainedReadFailure::Refused(e))) => {
                assert_eq!(&e.reason, r, "{root} {path:?}");
                assert_eq!(e.path, sandbox_path.as_str());
            }
            (Code(c), Err(ContainedReadFailure::Backend(e))) => {
                assert_eq!(&e.code(), c, "{path:?}")
            }
            (_, other) => panic!("{root} {path:?}: unexpected {other:?}"),
        }
    }
    match ops
        .read_contained(&id, &sp("/workspace"), &sp("/workspace/src/a.rs"), 3)
        .await
    {
        Err(ContainedReadFailure::Refused(e)) => {
            assert_eq!(
                e.reason,
                R::TooLarge {
                    limit: 3,
                    actual: 12
                }
            )
        }
        other => panic!("{other:?}"),
    }
    let exact = ops
        .read_contained(&id, &sp("/workspace"), &sp("/workspace/src/a.rs"), 12)
        .await;
    assert_eq!(exact.unwrap(), b"fn main() {}");
    match ops.read_contained("mem-77", &sp("/"), &sp("/x"), 1).await {
        Err(ContainedReadFailure::Backend(e)) => assert_eq!(e.code(), ErrorCode::NotFound),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn list_tree_names_every_leaf() {
    let (b, id) = setup().await;
    let f = b.files();
    f.mkdir(&id, &sp("/workspace/sub/mod"), true).await.unwrap();
    f.write(
        &id,
        &sp("/workspace/sub/mod/.git"),
        b"gitdir: ../.git/modules/mod",
        None,
    )
    .await
    .unwrap();
    f.write(&id, &sp("/workspace/sub/mod/hidden"), b"not listed", None)
        .await
        .unwrap();
    f.mkdir(&id, &sp("/workspace/empty"), false).await.unwrap();
    let ops = b.tree_list_ops().unwrap();
    let listing = ops.list_tree(&id, &sp("/workspace"), 1000).await.unwrap();
    assert!(listing.complete);
    let paths: Vec<&str> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "abs",
            "climb",
            "dangling",
            "fifo",
            "loop1",
            "loop2",
            "null",
            "rel",
            "sock",
            "src/a.rs",
            "src/deep/b.txt",
            "src/deep/upup",
            "src/dirlink",
            "sub/mod",
            "to-fifo",
            "up",
        ]
    );
    let kind = |p: &str| {
        listing
            .entries
            .iter()
            .find(|e| e.path == p)
            .map(|e| e.kind.clone())
            .unwrap()
    };
    assert_eq!(kind("sub/mod"), TreeEntryKind::Submodule);
    assert_eq!(kind("fifo"), TreeEntryKind::Fifo);
    assert_eq!(kind("sock"), TreeEntryKind::Socket);
    assert_eq!(kind("null"), TreeEntryKind::Device);
    assert_eq!(kind("up"), TreeEntryKind::Symlink);
    assert_eq!(
        kind("src/deep/b.txt"),
        TreeEntryKind::File {
            size: 3,
            sha256: sha256_of(b"bee"),
        }
    );
    let short = ops.list_tree(&id, &sp("/workspace"), 3).await.unwrap();
    assert!(!short.complete);
    assert_eq!(short.entries, listing.entries[..3]);
    assert_eq!(
        ops.list_tree(&id, &sp("/workspace/src/a.rs"), 9)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        ops.list_tree(&id, &sp("/gone"), 9)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
}

fn sha256_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[tokio::test]
async fn write_batch_is_all_or_nothing() {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    let ops = b.batch_write_ops().unwrap();
    let file = |p: &str, bytes: &[u8], mode| BatchFile {
        path: sp(p),
        bytes: bytes.to_vec(),
        mode,
    };
    ops.write_batch(
        &id,
        vec![
            file("/workspace/a", b"1", None),
            file("/tmp/b", b"2", Some(0o755)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        b.files().read(&id, &sp("/workspace/a")).await.unwrap(),
        b"1"
    );
    assert_eq!(
        b.files().stat(&id, &sp("/tmp/b")).await.unwrap().mode,
        0o755
    );
    let err = ops
        .write_batch(
            &id,
            vec![
                file("/workspace/a", b"changed", None),
                file("/workspace/new", b"n", None),
                file("/workspace/no/parent", b"x", None),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    assert_eq!(
        b.files().read(&id, &sp("/workspace/a")).await.unwrap(),
        b"1"
    );
    assert_eq!(
        b.files()
            .stat(&id, &sp("/workspace/new"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    // A batch naming a relative path cannot be made: its path is refused
    // where it is made, before any write.
    let err = corral_backend::sandbox_path("path", "relative").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert_eq!(
        b.files().read(&id, &sp("/workspace/a")).await.unwrap(),
        b"1"
    );
}
