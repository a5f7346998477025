//! Walking and removing directory trees through descriptors, never
//! following a symlink: every directory is entered with
//! `openat(parent, name, O_DIRECTORY | O_NOFOLLOW)`, every entry is
//! described with `fstatat(AT_SYMLINK_NOFOLLOW)` relative to its directory,
//! and every regular file is opened with `O_NOFOLLOW | O_NONBLOCK` and
//! checked to be the inode that was described. A name swapped for a symlink
//! mid-walk is skipped or refused, never followed out of the tree.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// The deepest directory nesting walked or removed. Each level holds one
/// descriptor and one stack frame; a deeper tree is refused (`ELOOP`)
/// rather than exhausting either.
pub const MAX_DEPTH: usize = 512;

fn too_deep() -> std::io::Error {
    std::io::Error::other(format!(
        "the directory tree is nested deeper than {MAX_DEPTH} levels"
    ))
}

/// One entry met by [`walk`].
pub struct Visit<'a> {
    /// The directory holding the entry.
    pub dir: BorrowedFd<'a>,
    /// The entry's name in `dir`.
    pub name: &'a CString,
    /// Its path relative to the walked root, `/`-separated, raw bytes.
    pub rel: &'a [u8],
    /// Its metadata (a symlink is described itself).
    pub stat: &'a Stat,
}

impl Visit<'_> {
    /// The entry's type.
    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.stat.st_mode)
    }

    /// The relative path as text (non-UTF-8 bytes replaced).
    pub fn rel_lossy(&self) -> String {
        String::from_utf8_lossy(self.rel).into_owned()
    }

    /// The relative path as a host path fragment.
    pub fn rel_os(&self) -> &OsStr {
        OsStr::from_bytes(self.rel)
    }

    /// Opens the entry, a regular file, for reading: `None` when it is no
    /// longer the regular file that was described.
    pub fn open_file(&self) -> std::io::Result<Option<File>> {
        open_regular_at(self.dir, self.name, self.stat)
    }
}

/// What a visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Go on; for a directory, enter it.
    Descend,
    /// Go on, but do not enter this directory.
    Skip,
    /// Stop the whole walk.
    Stop,
}

/// Opens regular file `name` in `dir` for reading if it is still the inode
/// `expected` describes.
pub fn open_regular_at(
    dir: BorrowedFd<'_>,
    name: &CString,
    expected: &Stat,
) -> std::io::Result<Option<File>> {
    let fd = match rustix::fs::openat(
        dir,
        name.as_c_str(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::NOTDIR) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    let same = st.st_dev == expected.st_dev
        && st.st_ino == expected.st_ino
        && FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
    Ok(same.then(|| File::from(fd)))
}

/// The entries of directory `dir` (opened for reading), sorted by name,
/// without `.` and `..`.
pub fn read_names(dir: BorrowedFd<'_>) -> std::io::Result<Vec<CString>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        names.push(name.to_owned());
    }
    names.sort();
    Ok(names)
}

/// Opens directory `name` in `dir` for reading, without following a symlink.
/// `None` when it is gone or no longer a directory.
pub fn open_dir_at(dir: BorrowedFd<'_>, name: &CString) -> std::io::Result<Option<OwnedFd>> {
    match rustix::fs::openat(
        dir,
        name.as_c_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Walks the tree below `dir` (open for reading) depth-first in name order,
/// calling `visit` for every entry. Returns `false` when a visitor stopped it.
pub fn walk(
    dir: BorrowedFd<'_>,
    visit: &mut dyn FnMut(&Visit<'_>) -> std::io::Result<Step>,
) -> std::io::Result<bool> {
    walk_in(dir, &[], 0, visit)
}

fn walk_in(
    dir: BorrowedFd<'_>,
    prefix: &[u8],
    depth: usize,
    visit: &mut dyn FnMut(&Visit<'_>) -> std::io::Result<Step>,
) -> std::io::Result<bool> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    for name in read_names(dir)? {
        let stat = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut rel = prefix.to_vec();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name.to_bytes());
        let v = Visit {
            dir,
            name: &name,
            rel: &rel,
            stat: &stat,
        };
        match visit(&v)? {
            Step::Stop => return Ok(false),
            Step::Skip => {}
            Step::Descend => {
                if FileType::from_raw_mode(stat.st_mode) == FileType::Directory
                    && let Some(sub) = open_dir_at(dir, &name)?
                    && !walk_in(sub.as_fd(), &rel, depth + 1, visit)?
                {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Removes `name` in `dir` and, if it is a directory, everything below it,
/// never following a symlink (a symlink is unlinked itself). Directories
/// without write or search permission for their owner get it first, so that
/// a tree the sandbox locked down can still be removed. `ENOENT` of the top
/// entry is returned; entries vanishing meanwhile are not errors.
pub fn remove_tree(dir: BorrowedFd<'_>, name: &CString) -> std::result::Result<(), Errno> {
    remove_in(dir, name, 0)
}

fn remove_in(dir: BorrowedFd<'_>, name: &CString, depth: usize) -> std::result::Result<(), Errno> {
    if depth > MAX_DEPTH {
        return Err(Errno::LOOP);
    }
    let st = rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::empty());
    }
    let open = || {
        rustix::fs::openat(
            dir,
            name.as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let sub = match open() {
        Ok(fd) => fd,
        Err(Errno::ACCESS) => {
            // Unreadable directory of ours: grant the owner access, then retry.
            // `fchmodat` follows symlinks, so the type is checked again after.
            rustix::fs::chmodat(dir, name.as_c_str(), Mode::RWXU, AtFlags::empty())?;
            open()?
        }
        Err(e) => return Err(e),
    };
    let sub_st = rustix::fs::fstat(&sub)?;
    if sub_st.st_dev != st.st_dev || sub_st.st_ino != st.st_ino {
        return Err(Errno::AGAIN);
    }
    if sub_st.st_mode & 0o700 != 0o700 {
        rustix::fs::fchmod(&sub, Mode::from_raw_mode((sub_st.st_mode & 0o7777) | 0o700))?;
    }
    let names = read_names(sub.as_fd())
        .map_err(|e| e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error))?;
    for child in names {
        match remove_in(sub.as_fd(), &child, depth + 1) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
    }
    rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::REMOVEDIR)
}

/// Removes the host directory `path` and everything below it; a missing
/// directory is not an error.
pub fn remove_host_tree(path: &std::path::Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    let parent = match rustix::fs::open(
        parent,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let name = CString::new(name.as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    match remove_tree(parent.as_fd(), &name) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
