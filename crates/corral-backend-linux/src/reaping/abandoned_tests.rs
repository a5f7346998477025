//! On the real host (as root): an entry of `reaping/` whose reaper was
//! killed at any point of its work is finished by the next gc pass, and an
//! entry a live reaper holds is left alone — one row per point.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cgroup::{CgroupLimits, Cgroups};
use crate::host::Host;
use crate::real_host::RealHost;
use crate::state::{FS_DIR, SANDBOX_PREFIX, State, random_hex};

/// Where the reaper of an entry stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KilledAt {
    /// Before it detached anything: the layer is mounted, with a file in it.
    BeforeUnmount,
    /// After the unmount: the disk image and the cgroup are left.
    AfterUnmount,
    /// After the disk image's unlink: the mount point and the cgroup are left.
    AfterUnlink,
    /// After the cgroup's removal, before the directory's: an empty entry.
    BeforeRmdir,
}

/// Makes the entry of `id` as a reaper killed at `at` leaves it; returns it.
fn left_at(state: &State, id: &str, at: KilledAt) -> PathBuf {
    let entry = state.reaping_entry(id);
    let fs = entry.join(FS_DIR);
    std::fs::create_dir_all(&fs).unwrap();
    if at != KilledAt::BeforeRmdir
        && let Some(cgroups) = &state.cgroups
    {
        cgroups.create(id, &CgroupLimits::default()).unwrap();
    }
    if matches!(at, KilledAt::BeforeUnmount | KilledAt::AfterUnmount) {
        std::fs::write(entry.join("disk.ext4"), b"image").unwrap();
    }
    if at == KilledAt::BeforeUnmount {
        rustix::mount::mount(
            "corral",
            &fs,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .unwrap();
        std::fs::write(fs.join("written-inside"), b"x").unwrap();
    }
    if at == KilledAt::BeforeRmdir {
        std::fs::remove_dir(&fs).unwrap();
    }
    entry
}

/// Whether anything is mounted at or below `dir`.
fn mounted_below(dir: &Path) -> bool {
    crate::rootfs::mount_points()
        .unwrap()
        .iter()
        .any(|p| p.starts_with(dir))
}

/// Whether sandbox `id`'s cgroup exists.
fn cgroup_exists(state: &State, id: &str) -> bool {
    state
        .cgroups
        .as_ref()
        .is_some_and(|c| c.open(id).unwrap().is_some())
}

/// Issue 16: "a reaper killed half-way leaves an entry `gc` finishes; two
/// reapers or a reaper and gc never both act on one entry; `corral gc`
/// reports it".
///
/// | reaper                         | a pass                                   |
/// |--------------------------------|------------------------------------------|
/// | killed before the unmount      | finishes it: no mount, cgroup, directory |
/// | killed after the unmount       | finishes it                              |
/// | killed after the image's unlink| finishes it                              |
/// | killed before the rmdir        | finishes it                              |
/// | alive (holds the entry's lock) | leaves it as it is, mount and cgroup too |
#[test]
fn gc_finishes_an_entry_whose_reaper_is_gone_and_leaves_a_live_reapers_alone() {
    let test = "gc_finishes_an_entry_whose_reaper_is_gone_and_leaves_a_live_reapers_alone";
    if !rustix::process::geteuid().is_root() {
        println!("SKIP {test}: needs root to mount");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cgroups = Cgroups::detect().ok();
    let host = Arc::new(RealHost);
    let state = State::open(dir.path(), cgroups, host.clone()).unwrap();
    let rows = [
        (KilledAt::BeforeUnmount, false),
        (KilledAt::AfterUnmount, false),
        (KilledAt::AfterUnlink, false),
        (KilledAt::BeforeRmdir, false),
        (KilledAt::BeforeUnmount, true),
    ];
    for (at, live) in rows {
        let id = format!("{SANDBOX_PREFIX}{}", random_hex().unwrap());
        let entry = left_at(&state, &id, at);
        let held = live.then(|| {
            host.lock_entry(&entry)
                .unwrap()
                .expect("the test takes the lock")
        });
        let report = crate::gc::gc(&state).unwrap();
        assert!(report.errors.is_empty(), "{at:?} live {live}: {report:?}");
        if live {
            assert!(entry.is_dir(), "{at:?}: a live reaper's entry is left");
            assert!(mounted_below(&entry), "{at:?}: its mount too");
            assert_eq!(
                cgroup_exists(&state, &id),
                state.cgroups.is_some(),
                "{at:?}"
            );
            assert!(!report.sandboxes.contains(&id), "{at:?}: {report:?}");
            drop(held);
            // Once its holder is gone, the next pass finishes it.
            let report = crate::gc::gc(&state).unwrap();
            assert!(report.sandboxes.contains(&id), "{at:?}: {report:?}");
        } else {
            assert!(
                report.sandboxes.contains(&id),
                "{at:?}: reported: {report:?}"
            );
        }
        assert!(!entry.exists(), "{at:?} live {live}: the entry is gone");
        assert!(
            !mounted_below(&entry),
            "{at:?} live {live}: no mount is left"
        );
        assert!(!cgroup_exists(&state, &id), "{at:?} live {live}: no cgroup");
    }
}
