//! Complete leaf listings of a directory tree (the `list_tree` primitive),
//! walked through descriptors that never follow a symlink, shared by every
//! backend that lists a host directory.

use rustix::fd::BorrowedFd;
use rustix::fs::{AtFlags, FileType};

use crate::error::{BackendError, Result};
use crate::snapshot_store::digest_of;
use crate::tree::{TreeEntry, TreeEntryKind, TreeListing};
use crate::walk::{self, Step, Visit};

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
    let (sha256, size) = digest_of(&mut file, None)?;
    Ok(Some((size, sha256)))
}

/// What entry `v` is as a leaf; `None` for a plain directory (walked into).
fn leaf_kind(v: &Visit<'_>) -> std::io::Result<Option<TreeEntryKind>> {
    Ok(Some(match v.file_type() {
        FileType::Directory if !is_submodule(v) => return Ok(None),
        FileType::Directory => TreeEntryKind::Submodule,
        FileType::RegularFile => match hash_file(v)? {
            Some((size, sha256)) => TreeEntryKind::File { size, sha256 },
            None => TreeEntryKind::Other,
        },
        FileType::Symlink => TreeEntryKind::Symlink,
        FileType::Fifo => TreeEntryKind::Fifo,
        FileType::Socket => TreeEntryKind::Socket,
        FileType::CharacterDevice | FileType::BlockDevice => TreeEntryKind::Device,
        FileType::Unknown => TreeEntryKind::Other,
    }))
}

/// Every leaf under directory `dir`: regular files (size and sha-256),
/// symlinks (not followed), special files (named), and directories holding
/// a `.git` file (submodules, not descended). Empty directories are not
/// leaves. Sorted by path; `complete: false` when it stopped at
/// `max_entries`. `shown` names the directory in errors.
pub fn list_leaves(dir: BorrowedFd<'_>, shown: &str, max_entries: usize) -> Result<TreeListing> {
    let mut entries: Vec<TreeEntry> = Vec::new();
    let mut complete = true;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        let Some(kind) = leaf_kind(v)? else {
            return Ok(Step::Descend);
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
    walk::walk(dir, &mut visit)
        .map_err(|e| BackendError::from_io(format!("list_tree {shown}"), &e))?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(TreeListing { entries, complete })
}
