//! Rules of the file primitives: whole reads, ranged reads up to EOF, round trips.

use crate::backend::Backend;
use crate::error::ErrorCode;
use crate::files::FileType;
use crate::sandbox::WORKSPACE_DIR;

use super::{fresh, skip, sp};

fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// SDK rule "Native whole-file … reads should return the full requested
/// data": a file larger than any single pipe or chunk comes back whole.
pub async fn files_whole_read_returns_every_byte(backend: &dyn Backend) {
    let rule = "files_whole_read_returns_every_byte";
    let sb = fresh(backend, rule).await;
    for len in [0usize, 1, 65_536, (1 << 20) + 3, 5 << 20] {
        let data = pattern(len);
        let path = sp(&format!("{WORKSPACE_DIR}/blob-{len}.bin"));
        backend
            .files()
            .write(&sb.id, &path, &data, None)
            .await
            .unwrap();
        let back = backend.files().read(&sb.id, &path).await.unwrap();
        assert_eq!(back.len(), data.len(), "{rule}: length of {len}-byte file");
        assert!(back == data, "{rule}: content of {len}-byte file differs");
    }
    backend.destroy(&sb.id).await.unwrap();
}

/// SDK rule "… and ranged reads should return the full requested data, up
/// to EOF".
pub async fn files_ranged_read_returns_bytes_up_to_eof(backend: &dyn Backend) {
    let rule = "files_ranged_read_returns_bytes_up_to_eof";
    let Some(ranged) = backend.files().ranged() else {
        skip(rule, backend, "the backend does not declare read_range");
        return;
    };
    let sb = fresh(backend, rule).await;
    let data = pattern((2 << 20) + 17);
    let path = sp(&format!("{WORKSPACE_DIR}/ranged.bin"));
    backend
        .files()
        .write(&sb.id, &path, &data, None)
        .await
        .unwrap();
    let n = data.len() as u64;
    let cases: [(u64, u64); 6] = [
        (0, 10),
        (1 << 20, 1 << 20),
        (n - 5, 5),
        (n - 5, 1_000),
        (n, 10),
        (n + 100, 10),
    ];
    for (offset, len) in cases {
        let got = ranged.read_range(&sb.id, &path, offset, len).await.unwrap();
        let start = (offset.min(n)) as usize;
        let end = (offset.saturating_add(len).min(n)) as usize;
        assert_eq!(
            got.len(),
            end - start,
            "{rule}: length at offset {offset} len {len}"
        );
        assert!(got == data[start..end], "{rule}: bytes at offset {offset}");
    }
    backend.destroy(&sb.id).await.unwrap();
}

/// write (with mode) → stat → list → mkdir → remove behave as documented.
pub async fn files_round_trip_write_stat_list_mkdir_remove(backend: &dyn Backend) {
    let rule = "files_round_trip_write_stat_list_mkdir_remove";
    let sb = fresh(backend, rule).await;
    let f = backend.files();
    let dir = sp(&format!("{WORKSPACE_DIR}/a/b"));
    f.mkdir(&sb.id, &dir, true).await.unwrap();
    f.mkdir(&sb.id, &dir, true)
        .await
        .unwrap_or_else(|e| panic!("{rule}: mkdir -p of an existing dir: {e}"));
    let script = sp(&format!("{dir}/run.sh"));
    f.write(&sb.id, &script, b"#!/bin/sh\necho ok\n", Some(0o755))
        .await
        .unwrap();
    let st = f.stat(&sb.id, &script).await.unwrap();
    assert_eq!(st.file_type, FileType::File, "{rule}");
    assert_eq!(st.size, 18, "{rule}: size");
    assert_eq!(st.mode & 0o777, 0o755, "{rule}: mode");
    f.write(&sb.id, &sp(&format!("{dir}/z.txt")), b"z", None)
        .await
        .unwrap();
    let names: Vec<String> = f
        .list(&sb.id, &dir)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        vec!["run.sh".to_string(), "z.txt".to_string()],
        "{rule}: list"
    );
    let st = f.stat(&sb.id, &dir).await.unwrap();
    assert_eq!(st.file_type, FileType::Directory, "{rule}");
    f.remove(&sb.id, &script, false).await.unwrap();
    assert_eq!(
        f.stat(&sb.id, &script).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: removed file still there"
    );
    f.remove(&sb.id, &sp(&format!("{WORKSPACE_DIR}/a")), true)
        .await
        .unwrap();
    assert_eq!(
        f.stat(&sb.id, &dir).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: recursive remove"
    );
    backend.destroy(&sb.id).await.unwrap();
}

/// Missing files and sandboxes are `not_found`, a write whose parent is
/// missing is `not_found` or creates the parent; bad paths `invalid_input`.
pub async fn files_missing_is_not_found(backend: &dyn Backend) {
    let rule = "files_missing_is_not_found";
    let sb = fresh(backend, rule).await;
    let f = backend.files();
    let missing = sp(&format!("{WORKSPACE_DIR}/missing.txt"));
    assert_eq!(
        f.read(&sb.id, &missing).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: read"
    );
    assert_eq!(
        f.stat(&sb.id, &missing).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: stat"
    );
    assert_eq!(
        f.remove(&sb.id, &missing, false).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: remove"
    );
    // A write whose parent is missing either fails with `not_found` and
    // leaves nothing behind, or (a backend whose `write` creates parents,
    // which its adapter may tell the SDK core) makes the parent and the file.
    let parent = sp(&format!("{WORKSPACE_DIR}/no"));
    let orphan = sp(&format!("{parent}/parent.txt"));
    match f.write(&sb.id, &orphan, b"x", None).await {
        Err(err) => {
            assert_eq!(
                err.code(),
                ErrorCode::NotFound,
                "{rule}: write without parent: {err}"
            );
            assert_eq!(
                f.stat(&sb.id, &parent).await.unwrap_err().code(),
                ErrorCode::NotFound,
                "{rule}: a refused write without parent left its parent behind"
            );
        }
        Ok(()) => {
            assert_eq!(
                f.read(&sb.id, &orphan).await.unwrap(),
                b"x",
                "{rule}: a write that creates its parent holds the bytes"
            );
            assert_eq!(
                f.stat(&sb.id, &parent).await.unwrap().file_type,
                FileType::Directory,
                "{rule}: a write that creates its parent makes a directory"
            );
        }
    }
    assert_eq!(
        f.read("no-such-sandbox", &missing)
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound,
        "{rule}: unknown sandbox"
    );
    // A relative path cannot reach a backend: it is refused where it is
    // made.
    assert_eq!(
        crate::sandbox_path("path", "relative.txt")
            .unwrap_err()
            .code(),
        ErrorCode::InvalidInput,
        "{rule}: relative path"
    );
    backend.destroy(&sb.id).await.unwrap();
}
