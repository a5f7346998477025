//! Snapshots of hostile content: sparse files far larger than the disk,
//! names that are not UTF-8, and what an interrupted capture leaves.

use std::time::{Duration, Instant, SystemTime};

use corral_backend::{Backend, CreateRequest, Labels};
use corral_backend_linux::LinuxBackend;

use super::super::Host;

/// Snapshots `id` (within `within`, or the test fails), restores the
/// snapshot into a new sandbox and returns (its id, the archive's size).
async fn snapshot_and_restore(b: &LinuxBackend, id: &str, within: Duration) -> (String, u64) {
    let ops = b.snapshot_ops().unwrap();
    let started = Instant::now();
    let snap = tokio::time::timeout(within, ops.snapshot(id, &Labels::new()))
        .await
        .expect("the snapshot finishes in time")
        .unwrap();
    assert!(started.elapsed() < within);
    let restored = b
        .create(CreateRequest {
            snapshot: Some(snap.id.clone()),
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    (restored.id, snap.size_bytes)
}

/// Issue item 16: a 4 EiB sparse file (no data at all) is archived as its
/// holes within seconds, not read as 4 EiB of zeros, and restores sparse.
/// Where the writable layer is ext4, whose largest file is just under
/// 16 TiB, the file is 15 TiB: still far past anything a dense read could
/// get through in the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_eib_sparse_file_is_archived_sparsely_within_seconds() {
    let Some(h) = Host::new("a_4_eib_sparse_file_is_archived_sparsely_within_seconds").await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let make = "for size in 4E 15T; do \
          truncate -s $size /workspace/huge 2>/dev/null && break; done; \
        stat -c %s /workspace/huge";
    let (code, size, err) = h.sh(&id, make).await;
    assert_eq!(code, 0, "{err}");
    let size = size.trim().to_string();
    assert!(
        ["4611686018427387904", "16492674416640"].contains(&size.as_str()),
        "a 4 EiB or 15 TiB file, not {size}"
    );
    let (restored, archive) = snapshot_and_restore(&h.backend, &id, Duration::from_secs(20)).await;
    assert!(archive < 64 * 1024, "the archive holds {archive} bytes");
    let (code, out, err) = h.sh(&restored, "stat -c '%s %b' /workspace/huge").await;
    assert_eq!(
        (code, out.trim()),
        (0, format!("{size} 0").as_str()),
        "{err}"
    );
    h.still_answers().await;
}

/// Issue item 16: a 1 GiB sparse file with a little data archives small
/// and restores byte-exact, its holes still holes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_gib_sparse_file_archives_small_and_restores_byte_exact_with_holes() {
    let test = "a_1_gib_sparse_file_archives_small_and_restores_byte_exact_with_holes";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let make = "f=/workspace/sparse; truncate -s 1G $f \
        && printf head | dd of=$f conv=notrunc status=none \
        && printf middle | dd of=$f bs=1 seek=536870913 conv=notrunc status=none \
        && printf tail | dd of=$f bs=1 seek=1073741820 conv=notrunc status=none \
        && md5sum < $f";
    let (code, before, err) = h.sh(&id, make).await;
    assert_eq!(code, 0, "{err}");
    let (restored, archive) = snapshot_and_restore(&h.backend, &id, Duration::from_secs(60)).await;
    assert!(archive < 1 << 20, "the archive holds {archive} bytes");
    let check = "f=/workspace/sparse; stat -c '%s %b' $f; md5sum < $f";
    let (code, out, err) = h.sh(&restored, check).await;
    assert_eq!(code, 0, "{err}");
    let (stat, sum) = out.split_once('\n').unwrap();
    let (size, blocks) = stat.split_once(' ').unwrap();
    assert_eq!(size, "1073741824");
    let blocks: u64 = blocks.parse().unwrap();
    assert!(blocks <= 64, "the restored file allocates {blocks} blocks");
    assert_eq!(sum, before, "the restored file is byte-exact");
    h.still_answers().await;
}

/// Issue item 16: names and symlink targets are bytes; ones that are not
/// UTF-8 snapshot and restore unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_link_targets_that_are_not_utf8_round_trip() {
    let Some(h) = Host::new("names_and_link_targets_that_are_not_utf8_round_trip").await else {
        return;
    };
    let id = h.sandbox(CreateRequest::default()).await;
    let make = "cd /workspace && n=$(printf 'caf\\351') && mkdir \"d$n\" \
        && printf body > \"d$n/f$n\" && ln -s \"d$n/f$n\" link";
    let (code, _, err) = h.sh(&id, make).await;
    assert_eq!(code, 0, "{err}");
    let (restored, _) = snapshot_and_restore(&h.backend, &id, Duration::from_secs(30)).await;
    let check = "cd /workspace && readlink link | od -An -c | tr -s ' '; cat link";
    let (code, out, err) = h.sh(&restored, check).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, " d c a f 351 / f c a f 351 \\n\nbody", "{out:?}");
    h.still_answers().await;
}

/// Issue item 16: a half-built snapshot (`snapshots/.tmp-*`) that an
/// interrupted capture left is removed by `gc` once past any capture's
/// deadline; a fresh one (perhaps being written) is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_snapshot_temporary_is_removed_by_gc() {
    let Some(h) = Host::new("a_stale_snapshot_temporary_is_removed_by_gc").await else {
        return;
    };
    let store = h.backend.state_dir().join("snapshots");
    let (stale, fresh) = (
        store.join(".tmp-00000000000000aa"),
        store.join(".tmp-00000000000000bb"),
    );
    for dir in [&stale, &fresh] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("archive.tmp"), b"half").unwrap();
    }
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&stale)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let report = h.backend.gc().await.unwrap();
    assert_eq!(report.host.snapshot_temporaries, 1, "{report:?}");
    assert!(!stale.exists(), "the stale temporary is gone");
    assert!(fresh.exists(), "the fresh one is left alone");
    h.still_answers().await;
}
