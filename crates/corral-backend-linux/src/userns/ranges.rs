//! Allocation of sandbox id ranges: one `flock`ed file per range under
//! `<state>/linux/id-ranges/`, named by the range's index and holding the
//! id of the sandbox that claimed it.
//!
//! A claim is the lock, not the file: whoever holds the lock (the creator
//! until the go-ahead, then the sandbox's outer init for as long as the
//! sandbox lives) owns the range. A file whose lock is free is left by a
//! sandbox that ended; the next claim may reuse it and [`sweep`] removes it.
//! A claimer checks after locking that the file it locked is still the one
//! at the path, so removing a free file never hands one range out twice.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use super::{FIRST_HOST_ID, RANGE_SIZE};

/// How many ranges there are: every range lies within `2^31..2^32-1`
/// (`u32::MAX` itself is never a valid id).
pub const RANGES: u32 = (u32::MAX - FIRST_HOST_ID) / RANGE_SIZE;

/// One sandbox's host id range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    index: u32,
}

impl IdRange {
    /// The range with `index` (`None` past the last one).
    pub fn from_index(index: u32) -> Option<IdRange> {
        (index < RANGES).then_some(IdRange { index })
    }

    /// The range's index (its file name).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The host id of sandbox id 0 (sandbox root).
    pub fn start(&self) -> u32 {
        FIRST_HOST_ID + self.index * RANGE_SIZE
    }

    /// Whether host id `id` lies in the range.
    pub fn contains(&self, id: u32) -> bool {
        (self.start()..self.start() + RANGE_SIZE).contains(&id)
    }
}

/// A claimed range: the range and the locked file that holds it.
#[derive(Debug)]
pub struct RangeClaim {
    /// The range.
    pub range: IdRange,
    /// The locked file: the range is claimed while this file description
    /// (or a duplicate of it, sent to the init) stays open.
    pub lock: File,
}

/// `<state>/linux/id-ranges`.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("id-ranges")
}

/// Claims the lowest free range for sandbox `id`.
pub fn claim(dir: &Path, id: &str) -> io::Result<RangeClaim> {
    std::fs::create_dir_all(dir)?;
    for index in 0..RANGES {
        let path = dir.join(index.to_string());
        let Some(mut lock) = try_lock(&path)? else {
            continue;
        };
        lock.set_len(0)?;
        lock.write_all(id.as_bytes())?;
        let range = IdRange { index };
        return Ok(RangeClaim { range, lock });
    }
    Err(io::Error::other(format!(
        "all {RANGES} id ranges are claimed"
    )))
}

/// Opens and locks `path` (creating it); `None` when another holds it, or
/// when the file locked was removed meanwhile.
fn try_lock(path: &Path) -> io::Result<Option<File>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?;
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let same = match std::fs::metadata(path) {
        Ok(at_path) => at_path.ino() == file.metadata()?.ino(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    Ok(same.then_some(file))
}

/// The range sandbox `id` holds or held (its file still names it).
pub fn of_sandbox(dir: &Path, id: &str) -> Option<IdRange> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries.flatten().find_map(|e| {
        let index: u32 = e.file_name().to_str()?.parse().ok()?;
        let mut owner = String::new();
        File::open(e.path()).ok()?.read_to_string(&mut owner).ok()?;
        (owner == id).then_some(IdRange::from_index(index)?)
    })
}

/// Removes the file of sandbox `id`'s range, when its lock is free (the
/// sandbox has ended). Best effort: a file left behind is reused or swept.
pub fn release(dir: &Path, id: &str) {
    if let Some(range) = of_sandbox(dir, id) {
        remove_if_free(&dir.join(range.index().to_string()));
    }
}

/// Removes every range file whose lock is free; returns how many.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| remove_if_free(&e.path()))
        .count()
}

fn remove_if_free(path: &Path) -> bool {
    match try_lock(path) {
        // Removed while locked: a claimer that opened it before sees that
        // its file is no longer at the path and moves on.
        Ok(Some(_locked)) => std::fs::remove_file(path).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_disjoint_above_2_pow_31_and_below_u32_max() {
        let first = IdRange::from_index(0).unwrap();
        assert_eq!(first.start(), 1 << 31);
        let last = IdRange::from_index(RANGES - 1).unwrap();
        assert!(u64::from(last.start()) + u64::from(RANGE_SIZE) <= u64::from(u32::MAX));
        assert!(IdRange::from_index(RANGES).is_none());
        let second = IdRange::from_index(1).unwrap();
        assert!(!first.contains(second.start()) && first.contains(second.start() - 1));
    }

    #[test]
    fn a_held_range_is_skipped_and_a_released_one_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let a = claim(tmp.path(), "lnx-a").unwrap();
        let b = claim(tmp.path(), "lnx-b").unwrap();
        assert_eq!((a.range.index(), b.range.index()), (0, 1));
        assert_eq!(of_sandbox(tmp.path(), "lnx-b"), Some(b.range));
        release(tmp.path(), "lnx-a");
        assert!(tmp.path().join("0").exists(), "a held range is not removed");
        drop(a);
        release(tmp.path(), "lnx-a");
        assert!(!tmp.path().join("0").exists());
        let c = claim(tmp.path(), "lnx-c").unwrap();
        assert_eq!(c.range.index(), 0);
        drop(b);
        assert_eq!(sweep(tmp.path()), 1);
    }
}
