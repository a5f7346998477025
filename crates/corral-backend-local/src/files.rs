//! The file primitives over a sandbox's `root/`.
//!
//! Sandbox path `/x/y` is host path `<sandbox>/root/x/y`. Paths are
//! normalized lexically first (`..` never climbs above `/`), then resolved
//! by the kernel beneath the root's descriptor: no primitive follows a
//! symlink out of the sandbox directory. Reads go through the shared
//! contained reads ([`corral_backend::contained`]); writes, listings and
//! removals through [`crate::beneath`] and [`corral_backend::walk`].

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::contained::ContainedRoot;
use corral_backend::{
    BackendError, ContainedReadFailure, ContainedReadOps, DirEntry, ErrorCode, FileOps, FileStat,
    FileType, RangedRead, Result, path,
};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::beneath::{SandboxRoot, contained_error, fs_error, join_shown};
use crate::blocking;
use crate::state::{State, random_hex, require_meta};
use corral_backend::walk;

/// The mode a written file gets when none is asked for.
const DEFAULT_FILE_MODE: u32 = 0o644;
/// The mode `mkdir` creates directories with (before the umask).
const DIR_MODE: u32 = 0o755;

/// A validated, normalized sandbox path: its components and its text.
pub(crate) struct Target {
    pub(crate) comps: Vec<String>,
    pub(crate) shown: String,
}

impl Target {
    /// Validates and normalizes `p`; `field` names it in errors.
    pub(crate) fn parse(field: &str, p: &str) -> Result<Self> {
        let comps = path::normalize(field, p)?;
        let shown = format!("/{}", comps.join("/"));
        Ok(Target { comps, shown })
    }
}

/// The file primitives of the local backend.
#[derive(Debug)]
pub(crate) struct LocalFiles {
    pub(crate) state: Arc<State>,
}

/// Converts a raw `st_mode` to the trait's file type.
pub(crate) fn file_type_of(st_mode: u32) -> FileType {
    use rustix::fs::FileType as R;
    match R::from_raw_mode(st_mode) {
        R::Directory => FileType::Directory,
        R::Symlink => FileType::Symlink,
        R::Fifo => FileType::Fifo,
        R::Socket => FileType::Socket,
        R::CharacterDevice => FileType::CharDevice,
        R::BlockDevice => FileType::BlockDevice,
        R::RegularFile | R::Unknown => FileType::File,
    }
}

/// Modification time of `st`, epoch milliseconds (0 before the epoch).
pub(crate) fn mtime_ms(st: &Stat) -> u64 {
    let ms = i128::from(st.st_mtime) * 1000 + i128::from(st.st_mtime_nsec) / 1_000_000;
    u64::try_from(ms.max(0)).unwrap_or(u64::MAX)
}

fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size).unwrap_or(0)
}

fn cname(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| BackendError::invalid("path contains a NUL byte"))
}

/// Opens the contained-read root of sandbox `id` (which must exist).
fn contained_root(state: &State, id: &str) -> Result<ContainedRoot> {
    require_meta(state, id)?;
    ContainedRoot::open(&state.root_dir(id)).map_err(|_| BackendError::sandbox_not_found(id))
}

/// Opens the descriptor root of sandbox `id` (which must exist).
pub(crate) fn sandbox_root(state: &State, id: &str) -> Result<SandboxRoot> {
    require_meta(state, id)?;
    SandboxRoot::open(&state.root_dir(id), id)
}

fn read(state: &State, id: &str, p: &str) -> Result<Vec<u8>> {
    let t = Target::parse("path", p)?;
    let root = contained_root(state, id)?;
    root.read(&t.shown, u64::MAX)
        .map_err(|e| contained_error("read", &t.shown, &e))
}

fn read_range(state: &State, id: &str, p: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    let t = Target::parse("path", p)?;
    let root = contained_root(state, id)?;
    root.read_range(&t.shown, offset, len)
        .map_err(|e| contained_error("read", &t.shown, &e))
}

fn stat(state: &State, id: &str, p: &str) -> Result<FileStat> {
    let t = Target::parse("path", p)?;
    let root = sandbox_root(state, id)?;
    let fd = root
        .open_at(&t.comps, OFlags::PATH, false)
        .map_err(|e| fs_error("stat", &t.shown, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| fs_error("stat", &t.shown, e))?;
    Ok(FileStat {
        path: t.shown,
        file_type: file_type_of(st.st_mode),
        size: size_of(&st),
        mode: st.st_mode & 0o7777,
        modified_at_ms: mtime_ms(&st),
    })
}

fn write(state: &State, id: &str, p: &str, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let t = Target::parse("path", p)?;
    let mode = mode.unwrap_or(DEFAULT_FILE_MODE);
    if mode > 0o7777 {
        return Err(BackendError::invalid(format!(
            "write {}: mode {mode:#o} has bits beyond 0o7777",
            t.shown
        )));
    }
    let root = sandbox_root(state, id)?;
    let (dir, name) = root.parent_of("write", &t.comps, &t.shown)?;
    let name = cname(name)?;
    match rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if file_type_of(st.st_mode) == FileType::Directory => {
            return Err(fs_error("write", &t.shown, Errno::ISDIR));
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => return Err(fs_error("write", &t.shown, e)),
    }
    let tmp = cname(&format!(
        ".corral-write-{}",
        random_hex().map_err(|e| BackendError::from_io("write: random", &e))?
    ))?;
    let result = write_new(&dir, &tmp, bytes, mode)
        .and_then(|()| rustix::fs::renameat(&dir, tmp.as_c_str(), &dir, name.as_c_str()));
    if let Err(e) = result {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_c_str(), AtFlags::empty());
        return Err(fs_error("write", &t.shown, e));
    }
    Ok(())
}

/// Creates `tmp` in `dir` (it must not exist), fills it, sets `mode` exactly.
fn write_new(
    dir: &OwnedFd,
    tmp: &CString,
    bytes: &[u8],
    mode: u32,
) -> std::result::Result<(), Errno> {
    let fd = rustix::fs::openat(
        dir,
        tmp.as_c_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let mut file = File::from(fd);
    file.write_all(bytes)
        .map_err(|e| e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error))?;
    // `fchmod` is not subject to the umask: the mode is exactly the one asked for.
    rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
}

fn list(state: &State, id: &str, p: &str) -> Result<Vec<DirEntry>> {
    let t = Target::parse("path", p)?;
    let root = sandbox_root(state, id)?;
    let dir = match root.open_at(&t.comps, OFlags::RDONLY | OFlags::DIRECTORY, true) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) if root.open_at(&t.comps, OFlags::PATH, true).is_ok() => {
            return Err(BackendError::invalid(format!(
                "list {}: not a directory",
                t.shown
            )));
        }
        Err(e) => return Err(fs_error("list", &t.shown, e)),
    };
    let names = walk::read_names(dir.as_fd())
        .map_err(|e| BackendError::from_io(format!("list {}", t.shown), &e))?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let st = match rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(fs_error("list", &t.shown, e)),
        };
        let name = String::from_utf8_lossy(name.to_bytes()).into_owned();
        out.push(DirEntry {
            path: join_shown(&t.shown, &name),
            name,
            file_type: file_type_of(st.st_mode),
            size: size_of(&st),
            mode: st.st_mode & 0o7777,
        });
    }
    Ok(out)
}

fn remove(state: &State, id: &str, p: &str, recursive: bool) -> Result<()> {
    let t = Target::parse("path", p)?;
    let root = sandbox_root(state, id)?;
    let (dir, name) = root.parent_of("remove", &t.comps, &t.shown)?;
    let name = cname(name)?;
    let st = rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| fs_error("remove", &t.shown, e))?;
    let res = if file_type_of(st.st_mode) != FileType::Directory {
        // A symlink is unlinked itself, never followed.
        rustix::fs::unlinkat(&dir, name.as_c_str(), AtFlags::empty())
    } else if recursive {
        walk::remove_tree(dir.as_fd(), &name)
    } else {
        rustix::fs::unlinkat(&dir, name.as_c_str(), AtFlags::REMOVEDIR)
    };
    res.map_err(|e| fs_error("remove", &t.shown, e))
}

fn mkdir(state: &State, id: &str, p: &str, parents: bool) -> Result<()> {
    let t = Target::parse("path", p)?;
    let root = sandbox_root(state, id)?;
    if !parents {
        let (dir, name) = root.parent_of("mkdir", &t.comps, &t.shown)?;
        return rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(DIR_MODE))
            .map_err(|e| fs_error("mkdir", &t.shown, e));
    }
    mkdir_all(&root, &t)
}

/// Creates directory `t` and its missing ancestors beneath `root`; no error
/// when it exists. Each step is resolved from the root again, so a symlink
/// met on the way is followed only while it stays beneath the root.
pub(crate) fn mkdir_all(root: &SandboxRoot, t: &Target) -> Result<()> {
    let exists_as_other = |shown: &str| {
        BackendError::new(
            ErrorCode::Conflict,
            format!("mkdir {}: {shown} exists and is not a directory", t.shown),
        )
    };
    for i in 1..=t.comps.len() {
        let prefix = &t.comps[..i];
        let shown = format!("/{}", prefix.join("/"));
        match root.open_at(prefix, OFlags::PATH | OFlags::DIRECTORY, true) {
            Ok(_) => continue,
            Err(Errno::NOENT) => {}
            Err(Errno::NOTDIR) => return Err(exists_as_other(&shown)),
            Err(e) => return Err(fs_error("mkdir", &shown, e)),
        }
        let (dir, name) = root.parent_of("mkdir", prefix, &shown)?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) => {}
            // Created meanwhile, or a dangling symlink: decided by resolving again.
            Err(Errno::EXIST) => {
                if root
                    .open_at(prefix, OFlags::PATH | OFlags::DIRECTORY, true)
                    .is_err()
                {
                    return Err(exists_as_other(&shown));
                }
            }
            Err(e) => return Err(fs_error("mkdir", &shown, e)),
        }
    }
    Ok(())
}

#[async_trait]
impl FileOps for LocalFiles {
    async fn read(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || read(&state, &id, &path)).await
    }

    async fn write(&self, id: &str, path: &str, bytes: &[u8], mode: Option<u32>) -> Result<()> {
        let (state, id, path, bytes) = (
            self.state.clone(),
            id.to_owned(),
            path.to_owned(),
            bytes.to_vec(),
        );
        blocking(move || write(&state, &id, &path, &bytes, mode)).await
    }

    async fn list(&self, id: &str, path: &str) -> Result<Vec<DirEntry>> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || list(&state, &id, &path)).await
    }

    async fn stat(&self, id: &str, path: &str) -> Result<FileStat> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || stat(&state, &id, &path)).await
    }

    async fn remove(&self, id: &str, path: &str, recursive: bool) -> Result<()> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || remove(&state, &id, &path, recursive)).await
    }

    async fn mkdir(&self, id: &str, path: &str, parents: bool) -> Result<()> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || mkdir(&state, &id, &path, parents)).await
    }

    fn ranged(&self) -> Option<&dyn RangedRead> {
        Some(self)
    }
}

#[async_trait]
impl RangedRead for LocalFiles {
    async fn read_range(&self, id: &str, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (state, id, path) = (self.state.clone(), id.to_owned(), path.to_owned());
        blocking(move || read_range(&state, &id, &path, offset, len)).await
    }
}

#[async_trait]
impl ContainedReadOps for crate::LocalBackend {
    /// `path` must lie (lexically, after normalization) under
    /// `allowed_root`, which is itself resolved beneath the sandbox root;
    /// the read is then resolved by the kernel beneath `allowed_root`.
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &str,
        path: &str,
        max_bytes: u64,
    ) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
        let (state, id, allowed_root, path) = (
            self.state().clone(),
            id.to_owned(),
            allowed_root.to_owned(),
            path.to_owned(),
        );
        blocking(move || {
            Ok(contained_root(&state, &id)?.read_under(&allowed_root, &path, max_bytes)?)
        })
        .await
    }
}
