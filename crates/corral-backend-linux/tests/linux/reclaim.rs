//! Reclaim: reading a sandbox changes nothing, and the one reclaim path
//! (`gc`, and a create that meets the key of an expired sandbox) removes
//! what is no longer anyone's — an expired sandbox, one whose PID 1 died, a
//! snapshot half-built by a capture killed mid-way — and spares what is
//! live or may still be in the making.
//!
//! The crashed capture is this test binary itself, run again as a child
//! with [`CAPTURE_CHILD_ENV`] naming the state directory: the ignored test
//! `capture_child` then starts a capture, and the parent kills it with
//! `SIGKILL` once the archive is being written.

use corral_backend::rules::sp;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest, Labels,
};
use corral_backend_linux::LinuxBackend;
use corral_backend_linux::gc::SNAPSHOT_GRACE;

use crate::common;
use common::{alive, backend, mounts_under};

/// Set in the child: the state directory to capture a snapshot in.
const CAPTURE_CHILD_ENV: &str = "CORRAL_CAPTURE_CHILD_STATE";

/// The directory of sandbox `id` on the host.
fn sandbox_dir(b: &LinuxBackend, id: &str) -> PathBuf {
    b.state_dir().join("sandboxes").join(id)
}

/// Waits up to 10 s for sandbox `id` to read `not_found`.
async fn until_gone(b: &LinuxBackend, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match b.connect(id).await {
            Err(e) if e.code() == ErrorCode::NotFound => return,
            other if Instant::now() > deadline => panic!("{id} still reads {other:?}"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

// Provider contract, lifecycle: an expired instance is gone to its callers;
// "Orphan reclaim": expired instances are reclaimed (here by gc, from the
// backend's own state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_timeout_ends_everything_at_the_deadline() {
    let test = "a_sandbox_timeout_ends_everything_at_the_deadline";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let req = CreateRequest {
        key: Some("expiring".try_into().unwrap()),
        timeout: Some(Duration::from_millis(1500)),
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let expires = info.expires_at_ms.expect("expires_at_ms is reported");
    assert!(expires >= info.created_at_ms + 1000, "{info:?}");
    let started = std::time::Instant::now();
    let mut out = CollectedOutput::default();
    let res = tokio::time::timeout(
        Duration::from_secs(20),
        b.exec(
            &info.id,
            ExecRequest::new(Command::argv(["sleep", "30"]).unwrap()),
            &mut out,
        ),
    )
    .await
    .expect("the command ends with the sandbox");
    let err = res.expect_err("a command outliving its sandbox is not a result");
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ended at the deadline"
    );
    until_gone(&b, &info.id).await;
    assert_eq!(
        b.connect(&info.id).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    let listed = b.list(&Labels::default()).await.unwrap();
    assert!(listed.iter().all(|s| s.id != info.id), "{listed:?}");
    assert_eq!(b.find(&"expiring".try_into().unwrap()).await.unwrap(), None);
    let refused = b
        .files()
        .read(&info.id, &sp("/etc/hostname"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::NotFound, "{refused}");
    // Those were reads: they tore nothing down.
    assert!(sandbox_dir(&b, &info.id).is_dir(), "still on disk");
    assert!(mounts_under(dir.path()) > 0, "its layer is still mounted");
    let report = b.gc().await.unwrap();
    assert_eq!(report.sandboxes, vec![info.id.clone()], "{report:?}");
    assert!(!sandbox_dir(&b, &info.id).exists());
    assert_eq!(mounts_under(dir.path()), 0, "torn down once seen expired");
    let again = b.gc().await.unwrap();
    assert!(again.sandboxes.is_empty(), "a second pass: {again:?}");
    assert_eq!(again.host.mounts_detached, 0, "a second pass: {again:?}");
}

// SDK spec: `keyMode: "exact"` and get-or-create — once `find` no longer
// returns an expired sandbox, a create with its key must be able to take it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_with_the_key_of_an_expired_sandbox_reclaims_it_and_takes_the_key() {
    let test = "a_create_with_the_key_of_an_expired_sandbox_reclaims_it_and_takes_the_key";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let keyed = |timeout: Option<Duration>| CreateRequest {
        key: Some("k".try_into().unwrap()),
        timeout,
        ..CreateRequest::default()
    };
    let old = b
        .create(keyed(Some(Duration::from_millis(500))))
        .await
        .unwrap();
    until_gone(&b, &old.id).await;
    assert_eq!(
        b.find(&"k".try_into().unwrap()).await.unwrap(),
        None,
        "gone to callers"
    );
    assert!(sandbox_dir(&b, &old.id).is_dir(), "not yet reclaimed");
    let new = b.create(keyed(None)).await.unwrap();
    assert_ne!(new.id, old.id);
    assert!(
        !sandbox_dir(&b, &old.id).exists(),
        "reclaimed by the create"
    );
    assert_eq!(
        b.find(&"k".try_into().unwrap())
            .await
            .unwrap()
            .map(|s| s.id),
        Some(new.id.clone())
    );
    let held = b.create(keyed(None)).await.unwrap_err();
    assert_eq!(
        held.code(),
        ErrorCode::Conflict,
        "a live holder keeps it: {held}"
    );
    b.destroy(&new.id).await.unwrap();
    assert!(b.wait_reaped(common::REAPED), "the reapers finish");
    assert_eq!(mounts_under(dir.path()), 0, "no mount is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_whose_init_died_is_swept_with_everything_it_held() {
    let test = "a_sandbox_whose_init_died_is_swept_with_everything_it_held";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let live = b.create(CreateRequest::default()).await.unwrap();
    let dead = b.create(CreateRequest::default()).await.unwrap();
    let pid = b.native(&dead.id).await.unwrap()["init_pid"]
        .as_u64()
        .unwrap() as i32;
    // Simulate a crash: PID 1 of `dead` (a process this test created) dies.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    // The kernel kills the whole pid namespace before PID 1 is gone: on a
    // loaded machine that can take a while.
    for _ in 0..1000 {
        if !alive(pid as u32) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let swept = b.gc().await.unwrap();
    assert_eq!(swept.sandboxes, vec![dead.id.clone()]);
    assert_eq!(swept.host.spared, vec![live.id.clone()], "{swept:?}");
    assert!(b.connect(&live.id).await.is_ok(), "the live sandbox stays");
    b.destroy(&live.id).await.unwrap();
    assert!(b.wait_reaped(common::REAPED), "the reaper finishes");
    assert_eq!(mounts_under(dir.path()), 0, "no mount is left");
}

/// The child: starts a capture of a sandbox holding incompressible data,
/// which the parent kills mid-way (run only by the parent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as the child of a_snapshot_half_built_by_a_killed_capture_is_reclaimed_once_past_the_grace"]
async fn capture_child() {
    let Some(dir) = std::env::var_os(CAPTURE_CHILD_ENV) else {
        println!("SKIP capture_child: run only as the child of the capture crash test");
        return;
    };
    let b = LinuxBackend::open(PathBuf::from(dir)).unwrap();
    let info = b.create(CreateRequest::default()).await.unwrap();
    common::sh(
        &b,
        &info.id,
        "head -c 67108864 /dev/urandom > /workspace/noise",
    )
    .await;
    println!("capturing");
    let snap = b.snapshot_ops().unwrap();
    snap.snapshot(&info.id, &Labels::default()).await.unwrap();
    // Reached only if the parent was too slow: it then fails.
    println!("captured");
    std::thread::sleep(Duration::from_secs(600));
}

/// The half-built snapshot directories (`.tmp-*`) of `store`.
fn half_built(store: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(store) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
        .map(|e| e.path())
        .collect()
}

/// Makes `path` look last changed `age` ago.
fn age(path: &Path, age: Duration) {
    let f = std::fs::File::open(path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

/// Runs [`capture_child`] on `state` and kills it with `SIGKILL` once its
/// archive holds bytes; returns the half-built snapshot it left.
fn kill_a_capture_mid_way(state: &Path) -> PathBuf {
    let (mut child, rx) =
        crate::crash_gc::start_test_child("reclaim::capture_child", CAPTURE_CHILD_ENV, state);
    let said = |rx: &mpsc::Receiver<String>, what: &str, wait: Duration| {
        let deadline = Instant::now() + wait;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(line) if line.ends_with(what) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    };
    assert!(
        said(&rx, "capturing", Duration::from_secs(60)),
        "the child starts its capture"
    );
    let store = state.join("linux/snapshots");
    let deadline = Instant::now() + Duration::from_secs(60);
    let writing = loop {
        let writing = half_built(&store)
            .into_iter()
            .find(|dir| std::fs::metadata(dir.join("archive.tmp")).is_ok_and(|m| m.len() > 0));
        if let Some(dir) = writing {
            break dir;
        }
        assert!(Instant::now() < deadline, "no archive is being written");
        std::thread::sleep(Duration::from_millis(2));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !said(&rx, "captured", Duration::ZERO),
        "the capture was killed mid-way"
    );
    writing
}

// DESIGN, "Nothing is lost": every orphan is reclaimable from the backend's
// own state. A capture killed mid-way leaves its hidden `.tmp-` directory
// (its drop never runs); gc removes it once it is older than any capture
// may run, never while it may still be one in progress, and never touches
// a published snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_half_built_by_a_killed_capture_is_reclaimed_once_past_the_grace() {
    let test = "a_snapshot_half_built_by_a_killed_capture_is_reclaimed_once_past_the_grace";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    if !b.capabilities().snapshot {
        println!("SKIP {test}: snapshots are not declared here (rootless)");
        return;
    }
    let ops = b.snapshot_ops().unwrap();
    let source = b.create(CreateRequest::default()).await.unwrap();
    common::sh(&b, &source.id, "echo kept > /workspace/kept").await;
    let published = ops.snapshot(&source.id, &Labels::default()).await.unwrap();
    let store = b.state_dir().join("snapshots");
    age(&store.join(&published.id), SNAPSHOT_GRACE * 2);

    let leftover = kill_a_capture_mid_way(dir.path());
    assert_eq!(half_built(&store), vec![leftover.clone()]);
    // (age of the leftover, reclaimed by gc?) — in this order, one pass each.
    let rows = [
        ("fresh: a capture in progress looks the same", None, false),
        (
            "younger than the grace",
            Some(SNAPSHOT_GRACE - Duration::from_secs(60)),
            false,
        ),
        (
            "past the grace",
            Some(SNAPSHOT_GRACE + Duration::from_secs(60)),
            true,
        ),
    ];
    for (row, aged, reclaimed) in rows {
        if let Some(by) = aged {
            age(&leftover, by);
        }
        let report = b.gc().await.unwrap();
        assert_eq!(
            report.host.snapshot_temporaries,
            usize::from(reclaimed),
            "{row}: {report:?}"
        );
        assert_eq!(leftover.exists(), !reclaimed, "{row}");
        assert!(report.host.spared.contains(&source.id), "{row}: {report:?}");
    }
    assert_eq!(
        b.gc().await.unwrap().host.snapshot_temporaries,
        0,
        "once only"
    );
    let listed = ops.list_snapshots(&Labels::default()).await.unwrap();
    assert_eq!(
        listed.iter().map(|s| &s.id).collect::<Vec<_>>(),
        vec![&published.id],
        "the published snapshot is never gc's"
    );
    ops.delete_snapshot(&published.id).await.unwrap();
    b.destroy(&source.id).await.unwrap();
}

/// Loop devices whose backing file lies under `dir` (an ext4 layer's disk
/// image, deleted or not).
fn loop_devices_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(blocks) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    blocks
        .flatten()
        .filter_map(|b| {
            let file = std::fs::read_to_string(b.path().join("loop/backing_file")).ok()?;
            file.contains(&needle)
                .then(|| b.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

/// Issue 16: `destroy` answers before its reaper detaches the writable
/// layer and removes the disk image, directory and cgroup; 20 destroys,
/// with gc passes running beside their reapers (a pass leaves an entry a
/// live reaper holds alone, and finishes one whose reaper is gone), leave
/// no mount, no loop device, no cgroup and no directory once the reapers
/// are done and a last pass ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_destroys_and_gc_leave_no_mount_loop_device_cgroup_or_directory() {
    let test = "twenty_destroys_and_gc_leave_no_mount_loop_device_cgroup_or_directory";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(b.create(CreateRequest::default()).await.unwrap().id);
    }
    for (n, id) in ids.iter().enumerate() {
        b.destroy(id).await.unwrap();
        // A pass beside the reapers in flight spares exactly the sandboxes
        // not destroyed yet.
        let report = b.gc().await.unwrap();
        assert!(report.errors.is_empty(), "{report:?}");
        let mut live = ids[n + 1..].to_vec();
        live.sort();
        assert_eq!(report.host.spared, live, "{report:?}");
    }
    assert!(b.wait_reaped(common::REAPED), "every reaper finishes");
    let last = b.gc().await.unwrap();
    assert!(
        last.sandboxes.is_empty(),
        "nothing is left to reclaim: {last:?}"
    );
    let state = dir.path().join("linux");
    assert_eq!(mounts_under(dir.path()), 0, "no mount is left");
    assert_eq!(
        loop_devices_under(dir.path()),
        Vec::<String>::new(),
        "no loop device is left"
    );
    for id in &ids {
        assert_eq!(
            common::cgroups_named(id),
            Vec::<PathBuf>::new(),
            "{id}: no cgroup is left"
        );
    }
    for sub in ["sandboxes", "reaping"] {
        let left: Vec<_> = std::fs::read_dir(state.join(sub))
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty(), "{sub}/ holds {left:?}");
    }
}

/// A destroyed sandbox whose reaper died before doing anything (here a
/// "reaper" that exits at once: `/bin/true` in `corral-init`'s place) is
/// left in `reaping/` with its layer mounted; a gc pass finishes it, names
/// it among the reclaimed sandboxes (what `corral gc` prints), and leaves
/// no mount, no cgroup and no directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_finishes_and_reports_a_destroyed_sandbox_whose_reaper_died() {
    let test = "gc_finishes_and_reports_a_destroyed_sandbox_whose_reaper_died";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    // SAFETY: read only where an init or a reaper starts; this test's
    // process (nextest runs one per process) starts none meanwhile but the
    // reaper of this destroy, and every test sets the same value back.
    unsafe { std::env::set_var("CORRAL_INIT", "/bin/true") };
    let destroyed = b.destroy(&id).await;
    // SAFETY: as above.
    unsafe { std::env::set_var("CORRAL_INIT", env!("CARGO_BIN_EXE_corral-init")) };
    destroyed.unwrap();
    let entry = dir.path().join("linux/reaping").join(&id);
    assert!(entry.is_dir(), "the entry is left for gc");
    assert!(mounts_under(&entry) > 0, "its layer is still mounted");
    let report = b.gc().await.unwrap();
    assert_eq!(report.sandboxes, vec![id.clone()], "{report:?}");
    assert!(report.errors.is_empty(), "{report:?}");
    assert!(!entry.exists(), "the entry is finished");
    assert_eq!(mounts_under(dir.path()), 0, "no mount is left");
    assert_eq!(
        common::cgroups_named(&id),
        Vec::<PathBuf>::new(),
        "no cgroup is left"
    );
    let again = b.gc().await.unwrap();
    assert!(again.sandboxes.is_empty(), "{again:?}");
}

/// Issue 16, hand-off to the reaper under hostile conditions (attack →
/// what must still hold: the sandbox finished, nothing mounted, nothing
/// left in `sandboxes/` or `reaping/`):
/// - `reaping/` removed while the backend is open (an operator, a tmp
///   cleaner) → the hand-off makes it again, or the destroy finishes the
///   sandbox itself; never an `Ok` that leaves the directory behind;
/// - the backend opened on a relative state directory → the reaper,
///   which refuses relative entries, is still handed an absolute one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destroy_finishes_its_sandbox_whatever_happened_to_the_reaping_directory() {
    let test = "a_destroy_finishes_its_sandbox_whatever_happened_to_the_reaping_directory";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    type Plant = fn(&Path);
    let rows: [(&str, Plant); 2] = [
        ("reaping/ removed while open", |state| {
            std::fs::remove_dir(state.join("reaping")).unwrap()
        }),
        ("nothing done to it", |_| {}),
    ];
    let state = dir.path().join("linux");
    for (attack, plant) in rows {
        let id = b.create(CreateRequest::default()).await.unwrap().id;
        plant(&state);
        b.destroy(&id).await.unwrap();
        assert!(
            b.wait_reaped(common::REAPED),
            "{attack}: the reapers finish"
        );
        assert!(!sandbox_dir(&b, &id).exists(), "{attack}: {id} is finished");
        assert_eq!(mounts_under(dir.path()), 0, "{attack}: no mount is left");
        assert!(
            !state.join("reaping").join(&id).exists(),
            "{attack}: no entry is left"
        );
    }

    // A relative state directory: the same destroy, from a backend opened
    // by a path relative to this process's working directory (spelled with
    // `..` up to `/`: changing the directory would move every other test
    // of a process that runs several).
    let parent = tempfile::tempdir().unwrap();
    let cwd = std::env::current_dir().unwrap();
    let mut relative_path = PathBuf::new();
    for _ in cwd.components().skip(1) {
        relative_path.push("..");
    }
    relative_path.push(parent.path().strip_prefix("/").unwrap());
    relative_path.push("relative-state");
    assert!(relative_path.is_relative(), "{}", relative_path.display());
    let relative = LinuxBackend::open(&relative_path).unwrap();
    let id = relative.create(CreateRequest::default()).await.unwrap().id;
    relative.destroy(&id).await.unwrap();
    assert!(
        relative.wait_reaped(common::REAPED),
        "relative state dir: the reaper finishes the entry"
    );
    assert_eq!(mounts_under(parent.path()), 0, "relative: no mount is left");
    let left: Vec<_> = std::fs::read_dir(parent.path().join("relative-state/linux/reaping"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "relative: reaping/ holds {left:?}");
    relative.destroy_all().unwrap();
}
