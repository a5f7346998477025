//! The file calls on a backend without a ranged read and with a `write`
//! that creates parents: the core then reads whole files and slices them,
//! and skips its own `mkdir`.

use crate::sandbox_support;
use std::time::Duration;

use corral_sdk::processes::LogCursor;
use corral_sdk::{Command, CreateOptions, StreamKind};
use sandbox_support::Wrapped;

// SDK spec, "Avoiding extra calls": with `files.writeCreatesParents` "the core
// then omits its unconditional mkdir"; without a ranged read the core reads
// the whole file (which returns "the full requested data, up to EOF").
#[tokio::test]
async fn whole_reads_stand_in_for_ranged_reads_and_parents_are_left_to_write() {
    let inner = sandbox_support::memory();
    let wrapped = Wrapped::new(inner.backend.clone()).activity(false, true);
    let counts = wrapped.counts.clone();
    let sb = wrapped
        .provider()
        .create(CreateOptions::default())
        .await
        .unwrap();
    assert!(sb.backend().files().ranged().is_none());
    let f = sb.files();

    let before = counts.summary().0;
    f.write("/workspace/a/b/c/file", "0123456789")
        .await
        .unwrap();
    assert_eq!(
        counts.summary().0,
        before,
        "no mkdir when write creates parents"
    );
    assert_eq!(
        f.read_range("/workspace/a/b/c/file", 3, 4).await.unwrap(),
        b"3456"
    );
    assert_eq!(
        f.read_range("/workspace/a/b/c/file", 8, 10).await.unwrap(),
        b"89"
    );
    assert_eq!(
        f.read_range("/workspace/a/b/c/file", 20, 10).await.unwrap(),
        b""
    );

    let host = tempfile::tempdir().unwrap();
    let down = f
        .download("/workspace/a", host.path().join("a"))
        .await
        .unwrap();
    assert_eq!((down.files, down.bytes), (1, 10));
    assert_eq!(
        std::fs::read(host.path().join("a/b/c/file")).unwrap(),
        b"0123456789"
    );

    // Process logs read with whole reads too, and continue from the cursor.
    let procs = sb.processes();
    procs
        .start("p", Command::shell("echo one; echo two").unwrap())
        .await
        .unwrap();
    procs.wait("p", Duration::from_secs(60)).await.unwrap();
    let first = procs
        .logs(
            "p",
            LogCursor {
                stdout: 4,
                stderr: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(first.text(StreamKind::Stdout), "two\n");
    assert_eq!(first.next.stdout, 8);
    let again = procs.logs("p", first.next).await.unwrap();
    assert!(again.chunks.is_empty());
    sb.destroy().await.unwrap();
}

// SDK spec, "Avoiding extra calls": without `files.writeCreatesParents` the
// core makes missing parents itself — for an upload, once per directory it
// creates, not again for every file written into one.
#[tokio::test]
async fn an_upload_makes_each_directory_once() {
    let inner = sandbox_support::memory();
    let wrapped = Wrapped::new(inner.backend.clone()).activity(false, false);
    let counts = wrapped.counts.clone();
    let sb = wrapped
        .provider()
        .create(CreateOptions::default())
        .await
        .unwrap();
    let src = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(src.path().join(name), name).unwrap();
    }
    std::fs::create_dir(src.path().join("sub")).unwrap();
    std::fs::write(src.path().join("sub/d"), "d").unwrap();

    let before = counts.summary().0;
    let up = sb
        .files()
        .upload(src.path(), "/workspace/up")
        .await
        .unwrap();
    assert_eq!((up.files, up.dirs), (4, 2));
    assert_eq!(counts.summary().0 - before, 2, "one mkdir per directory");
    assert_eq!(
        sb.files().read_text("/workspace/up/sub/d").await.unwrap(),
        "d"
    );

    // A single file still gets its parents made.
    let one = src.path().join("a");
    sb.files()
        .upload(&one, "/workspace/new/dir/a")
        .await
        .unwrap();
    assert_eq!(
        sb.files().read_text("/workspace/new/dir/a").await.unwrap(),
        "a"
    );
    sb.destroy().await.unwrap();
}
