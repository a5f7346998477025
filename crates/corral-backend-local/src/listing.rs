//! Complete leaf listings (`list_tree`) and usage (`usage`), both walks
//! through descriptors that never follow a symlink.

use corral_backend::{BackendError, Result, TreeListing, Usage};
use rustix::fd::AsFd;
use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;

use crate::beneath::fs_error;
use crate::files::{Target, sandbox_root};
use crate::state::State;
use corral_backend::walk::{self, Step, Visit};

/// Every leaf under `root` in sandbox `id`: regular files (size and
/// sha-256), symlinks (not followed), special files (named), and
/// directories holding a `.git` file (submodules, not descended). Empty
/// directories are not leaves. Sorted by path; `complete: false` when it
/// stopped at `max_entries`.
pub(crate) fn list_tree(
    state: &State,
    id: &str,
    root: &str,
    max_entries: usize,
) -> Result<TreeListing> {
    let t = Target::parse("root", root)?;
    let sroot = sandbox_root(state, id)?;
    let dir = match sroot.open_at(&t.comps, OFlags::RDONLY | OFlags::DIRECTORY, true) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) if sroot.open_at(&t.comps, OFlags::PATH, true).is_ok() => {
            return Err(BackendError::invalid(format!(
                "list_tree {}: not a directory",
                t.shown
            )));
        }
        Err(e) => return Err(fs_error("list_tree", &t.shown, e)),
    };
    corral_backend::leaves::list_leaves(dir.as_fd(), &t.shown, max_entries)
}

/// Usage of sandbox `id`: the apparent size of everything under its root
/// (regular files and symlinks); CPU, memory and processes are not measured
/// (`None`): nothing groups a sandbox's host processes.
pub(crate) fn usage(state: &State, id: &str) -> Result<Usage> {
    let sroot = sandbox_root(state, id)?;
    let dir = sroot
        .open_at(&[], OFlags::RDONLY | OFlags::DIRECTORY, true)
        .map_err(|e| fs_error("usage", "/", e))?;
    let mut bytes = 0u64;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        if matches!(v.file_type(), FileType::RegularFile | FileType::Symlink) {
            bytes = bytes.saturating_add(u64::try_from(v.stat.st_size).unwrap_or(0));
        }
        Ok(Step::Descend)
    };
    walk::walk(dir.as_fd(), &mut visit).map_err(|e| BackendError::from_io("usage", &e))?;
    Ok(Usage {
        cpu_ms: None,
        memory_bytes: None,
        disk_bytes: Some(bytes),
        processes: None,
    })
}
