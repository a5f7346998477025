//! The sandbox's writable root belongs to its id range: the host shifts
//! the owner of everything on the fresh tmpfs (the skeleton, and a
//! restored snapshot's files) into the range once, before the init starts,
//! so root inside owns what it may write.
//!
//! A sandbox id `n` below [`RANGE_SIZE`] becomes `start + n`; an id of some
//! other sandbox range (a snapshot taken in another sandbox) keeps its
//! offset in its range; anything else becomes the range's `nobody`.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{FIRST_HOST_ID, IdRange, RANGE_SIZE};

/// A sandbox's `nobody` (65534).
pub const NOBODY: u32 = 65534;

/// Host id `id` shifted into `range`.
pub fn shifted(id: u32, range: IdRange) -> u32 {
    let offset = if id < RANGE_SIZE {
        id
    } else if id >= FIRST_HOST_ID {
        (id - FIRST_HOST_ID) % RANGE_SIZE
    } else {
        NOBODY
    };
    range.start() + offset
}

/// Shifts the owner and group of `root` and everything beneath it on the
/// same mount into `range` (symlinks themselves, never their targets;
/// other mounts are not entered).
pub fn shift_tree(root: &Path, range: IdRange) -> io::Result<()> {
    let mount = mount_of(root)?;
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        if mount_of(&path)? != mount {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)?;
        let (uid, gid) = (shifted(meta.uid(), range), shifted(meta.gid(), range));
        if (uid, gid) != (meta.uid(), meta.gid()) {
            std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                todo.push(entry?.path());
            }
        }
    }
    Ok(())
}

/// The id of the mount `path` (not followed when a symlink) is on: a bind
/// of the same file system onto a path beneath (a read-only `/etc`) has
/// an id of its own.
fn mount_of(path: &Path) -> io::Result<u64> {
    let st = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::MNT_ID,
    )?;
    Ok(st.stx_mnt_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_shift_into_the_range_and_strangers_become_nobody() {
        let r = IdRange::from_index(3).unwrap();
        assert_eq!(shifted(0, r), r.start());
        assert_eq!(shifted(1000, r), r.start() + 1000);
        let other = IdRange::from_index(7).unwrap();
        assert_eq!(shifted(other.start() + 5, r), r.start() + 5);
        assert_eq!(shifted(r.start() + 5, r), r.start() + 5);
        assert_eq!(shifted(100_000, r), r.start() + NOBODY);
    }
}
