//! The file primitives over the in-memory tree.

use corral_backend::rules::sp;
use std::sync::Arc;

use corral_backend::{Backend, CreateRequest, ErrorCode, FileType};
use corral_backend_memory::{ManualClock, MemoryBackend, SpecialKind};

async fn setup() -> (MemoryBackend, Arc<ManualClock>, String) {
    let clock = Arc::new(ManualClock::new(1_000));
    let b = MemoryBackend::with_clock(clock.clone());
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    (b, clock, id)
}

#[tokio::test]
async fn a_new_sandbox_has_workspace_and_tmp() {
    let (b, _, id) = setup().await;
    let names: Vec<String> = b
        .files()
        .list(&id, &sp("/"))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["tmp", "workspace"]);
    assert!(
        b.files()
            .list(&id, &sp("/workspace"))
            .await
            .unwrap()
            .is_empty()
    );
    let tmp = b.files().stat(&id, &sp("/tmp")).await.unwrap();
    assert_eq!((tmp.file_type, tmp.mode), (FileType::Directory, 0o1777));
}

#[tokio::test]
async fn round_trip_with_modes_and_mtimes_from_the_clock() {
    let (b, clock, id) = setup().await;
    let f = b.files();
    f.write(&id, &sp("/workspace/a.txt"), b"hello", None)
        .await
        .unwrap();
    assert_eq!(
        f.read(&id, &sp("/workspace/a.txt")).await.unwrap(),
        b"hello"
    );
    let st = f.stat(&id, &sp("/workspace/./a.txt")).await.unwrap();
    assert_eq!(st.path, "/workspace/a.txt");
    assert_eq!((st.size, st.mode, st.modified_at_ms), (5, 0o644, 1_000));
    clock.advance(std::time::Duration::from_secs(2));
    f.write(&id, &sp("/workspace/a.txt"), b"hi", Some(0o600))
        .await
        .unwrap();
    let st = f.stat(&id, &sp("/workspace/a.txt")).await.unwrap();
    assert_eq!((st.size, st.mode, st.modified_at_ms), (2, 0o600, 3_000));
    // Replacing without a mode gives the default again, as a fresh file would.
    f.write(&id, &sp("/workspace/a.txt"), b"x", None)
        .await
        .unwrap();
    assert_eq!(
        f.stat(&id, &sp("/workspace/a.txt")).await.unwrap().mode,
        0o644
    );
    let err = f
        .write(&id, &sp("/workspace/b"), b"", Some(0o17777))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    let entries = f.list(&id, &sp("/workspace")).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, "/workspace/a.txt");
    assert_eq!(entries[0].file_type, FileType::File);
}

#[tokio::test]
async fn ranged_reads_stop_at_eof() {
    let (b, _, id) = setup().await;
    let data: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    b.files()
        .write(&id, &sp("/workspace/r"), &data, None)
        .await
        .unwrap();
    let r = b.files().ranged().unwrap();
    assert_eq!(
        r.read_range(&id, &sp("/workspace/r"), 10, 5).await.unwrap(),
        &data[10..15]
    );
    assert_eq!(
        r.read_range(&id, &sp("/workspace/r"), 99_990, 100)
            .await
            .unwrap(),
        &data[99_990..]
    );
    assert!(
        r.read_range(&id, &sp("/workspace/r"), 100_000, 1)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        r.read_range(&id, &sp("/workspace/r"), u64::MAX, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        r.read_range(&id, &sp("/workspace/r"), 0, u64::MAX)
            .await
            .unwrap(),
        data
    );
    let err = r
        .read_range(&id, &sp("/workspace/none"), 0, 1)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
}

#[tokio::test]
async fn errors_use_the_closed_codes() {
    let (b, _, id) = setup().await;
    let f = b.files();
    let code = |r: corral_backend::Result<()>| r.unwrap_err().code();
    assert_eq!(
        code(f.write(&id, &sp("/workspace/no/x"), b"", None).await),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(f.write(&id, &sp("/workspace"), b"", None).await),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        corral_backend::sandbox_path("path", "rel")
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput,
        "a relative path is refused where it is made"
    );
    assert_eq!(
        f.read(&id, &sp("/workspace")).await.unwrap_err().code(),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        code(f.mkdir(&id, &sp("/workspace"), false).await),
        ErrorCode::Conflict
    );
    assert_eq!(
        code(f.mkdir(&id, &sp("/a/b"), false).await),
        ErrorCode::NotFound
    );
    f.write(&id, &sp("/workspace/file"), b"", None)
        .await
        .unwrap();
    assert_eq!(
        code(f.mkdir(&id, &sp("/workspace/file/d"), true).await),
        ErrorCode::Conflict
    );
    assert_eq!(
        f.list(&id, &sp("/workspace/file"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    f.mkdir(&id, &sp("/workspace/d/e"), true).await.unwrap();
    assert_eq!(
        code(f.remove(&id, &sp("/workspace/d"), false).await),
        ErrorCode::Conflict
    );
    f.remove(&id, &sp("/workspace/d/e"), false).await.unwrap();
    f.remove(&id, &sp("/workspace/d"), false).await.unwrap();
    assert_eq!(
        code(f.remove(&id, &sp("/"), true).await),
        ErrorCode::InvalidInput
    );
    assert_eq!(
        f.read("mem-99", &sp("/workspace/file"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
}

#[tokio::test]
async fn symlinks_are_followed_by_reads_and_replaced_by_writes() {
    let (b, _, id) = setup().await;
    let f = b.files();
    f.write(&id, &sp("/workspace/target"), b"T", None)
        .await
        .unwrap();
    b.symlink(&id, &sp("/workspace/link"), "target").unwrap();
    b.symlink(&id, &sp("/workspace/abs"), "/workspace/target")
        .unwrap();
    b.symlink(&id, &sp("/workspace/dirlink"), "/tmp").unwrap();
    assert_eq!(
        b.symlink(&id, &sp("/workspace/link"), "x")
            .unwrap_err()
            .code(),
        ErrorCode::Conflict
    );
    assert_eq!(f.read(&id, &sp("/workspace/link")).await.unwrap(), b"T");
    assert_eq!(f.read(&id, &sp("/workspace/abs")).await.unwrap(), b"T");
    let st = f.stat(&id, &sp("/workspace/link")).await.unwrap();
    assert_eq!((st.file_type, st.size), (FileType::Symlink, 6));
    f.write(&id, &sp("/workspace/dirlink/x"), b"through", None)
        .await
        .unwrap();
    assert_eq!(f.read(&id, &sp("/tmp/x")).await.unwrap(), b"through");
    // write replaces the link itself, as write-then-rename does.
    f.write(&id, &sp("/workspace/link"), b"new", None)
        .await
        .unwrap();
    assert_eq!(f.read(&id, &sp("/workspace/target")).await.unwrap(), b"T");
    assert_eq!(
        f.stat(&id, &sp("/workspace/link")).await.unwrap().file_type,
        FileType::File
    );
    // remove removes a link, not its target.
    f.remove(&id, &sp("/workspace/abs"), false).await.unwrap();
    assert_eq!(f.read(&id, &sp("/workspace/target")).await.unwrap(), b"T");
    b.symlink(&id, &sp("/workspace/loop1"), "loop2").unwrap();
    b.symlink(&id, &sp("/workspace/loop2"), "loop1").unwrap();
    assert_eq!(
        f.read(&id, &sp("/workspace/loop1"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
    b.mkfifo(&id, &sp("/workspace/fifo")).unwrap();
    b.mknod(&id, &sp("/workspace/dev"), SpecialKind::CharDevice)
        .unwrap();
    assert_eq!(
        f.stat(&id, &sp("/workspace/fifo")).await.unwrap().file_type,
        FileType::Fifo
    );
    assert_eq!(
        f.stat(&id, &sp("/workspace/dev")).await.unwrap().file_type,
        FileType::CharDevice
    );
    assert_eq!(
        f.read(&id, &sp("/workspace/fifo"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput
    );
}
