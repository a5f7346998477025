//! Complete leaf listings (`list_tree`) and usage (`usage`), both walks
//! through descriptors that never follow a symlink.

use std::io::Read;

use corral_backend::{BackendError, Result, TreeEntry, TreeEntryKind, TreeListing, Usage};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::beneath::fs_error;
use crate::files::{Target, sandbox_root};
use crate::state::State;
use corral_backend::walk::{self, Step, Visit};

/// Whether directory entry `v` holds a `.git` *file* (a Git submodule's
/// checkout, or a worktree).
fn is_submodule(v: &Visit<'_>) -> bool {
    let Ok(Some(dir)) = walk::open_dir_at(v.dir, v.name) else {
        return false;
    };
    rustix::fs::statat(&dir, ".git", AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
}

/// Size and `sha256:<hex>` of regular file `v`; `None` if it was replaced
/// meanwhile.
fn hash_file(v: &Visit<'_>) -> std::io::Result<Option<(u64, String)>> {
    let Some(mut file) = v.open_file()? else {
        return Ok(None);
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some((
        size,
        format!("sha256:{}", hex::encode(hasher.finalize())),
    )))
}

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
    let mut entries: Vec<TreeEntry> = Vec::new();
    let mut complete = true;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        let kind = match v.file_type() {
            FileType::Directory => {
                if !is_submodule(v) {
                    return Ok(Step::Descend);
                }
                TreeEntryKind::Submodule
            }
            FileType::RegularFile => match hash_file(v)? {
                Some((size, sha256)) => TreeEntryKind::File { size, sha256 },
                None => TreeEntryKind::Other,
            },
            FileType::Symlink => TreeEntryKind::Symlink,
            FileType::Fifo => TreeEntryKind::Fifo,
            FileType::Socket => TreeEntryKind::Socket,
            FileType::CharacterDevice | FileType::BlockDevice => TreeEntryKind::Device,
            FileType::Unknown => TreeEntryKind::Other,
        };
        if entries.len() >= max_entries {
            complete = false;
            return Ok(Step::Stop);
        }
        entries.push(TreeEntry {
            path: v.rel_lossy(),
            kind,
        });
        Ok(Step::Skip)
    };
    walk::walk(dir.as_fd(), &mut visit)
        .map_err(|e| BackendError::from_io(format!("list_tree {}", t.shown), &e))?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(TreeListing { entries, complete })
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
