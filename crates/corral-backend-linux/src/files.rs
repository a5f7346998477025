//! The file primitives, from the host, through the sandbox's tmpfs.
//!
//! Sandbox path `/x/y` is `<sandbox>/fs/root/x/y` on the host: the root is
//! the tmpfs mounted in the state directory *before* the init entered its
//! own mount namespace, so the host sees exactly what the sandbox writes
//! (no `/proc/<pid>/root` magic link is ever used). Every path is
//! normalized lexically, then resolved by the kernel with
//! `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)` relative to a
//! descriptor of that root: a symlink planted by the sandbox resolves
//! inside the sandbox, never on the host. The final component is then
//! operated on relative to its parent's descriptor without following it.
//!
//! The `host` image's read-only directories (`/usr`, `/lib*`, the curated
//! `/etc` and the host pieces bound beneath it) are mounted on that root in
//! the host's mount namespace, and the sandbox's mount namespace is a copy
//! of it: a file reads the same bytes from either side, and a write into a
//! read-only part fails with `invalid_input` saying so. What the host does
//! not see: the sandbox's own `/dev` and `/proc`.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{
    BackendError, DirEntry, ErrorCode, FileOps, FileStat, FileType, RangedRead, Result, path,
};
use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::contained::open_beneath;
use crate::state::{State, random_hex, require_meta};

/// Largest file `read` returns whole.
const MAX_READ: u64 = 1 << 30;

/// The file primitives of the linux backend.
#[derive(Debug)]
pub struct LinuxFiles {
    pub(crate) state: Arc<State>,
}

/// A file-system failure as a backend error: `op` on `shown` (the sandbox
/// path), coded by what the errno says about the request.
pub(crate) fn fs_error(op: &str, shown: &str, e: Errno) -> BackendError {
    if e == Errno::ROFS {
        return BackendError::invalid(format!(
            "{op} {shown}: the path is read-only (a part of the sandbox's image)"
        ));
    }
    let code = match e {
        Errno::NOENT => ErrorCode::NotFound,
        Errno::NOTDIR | Errno::ISDIR | Errno::INVAL | Errno::LOOP | Errno::XDEV => {
            ErrorCode::InvalidInput
        }
        Errno::EXIST | Errno::NOTEMPTY => ErrorCode::Conflict,
        Errno::NOSPC | Errno::DQUOT | Errno::FBIG => ErrorCode::Quota,
        _ => ErrorCode::Io,
    };
    BackendError::new(code, format!("{op} {shown}: {}", std::io::Error::from(e)))
}

/// A resolved target: the root, the normalized components and the text.
struct Target {
    root: OwnedFd,
    comps: Vec<String>,
    shown: String,
}

impl Target {
    fn open(state: &State, id: &str, p: &str) -> Result<Self> {
        let comps = path::normalize("path", p)?;
        require_meta(state, id)?;
        let root = rustix::fs::open(
            crate::userns::rootless::files_root(state, id),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| fs_error("opening the root of", id, e))?;
        Ok(Target {
            root,
            shown: format!("/{}", comps.join("/")),
            comps,
        })
    }

    /// Opens the whole path (following symlinks, inside the root).
    fn open_full(&self, flags: OFlags) -> Result<OwnedFd> {
        open_beneath(&self.root, &self.comps, flags)
            .map_err(|e| fs_error("opening", &self.shown, e))
    }

    /// The parent directory's descriptor and the final name; `None` for `/`.
    fn parent(&self) -> Result<Option<(OwnedFd, &str)>> {
        let Some((name, parent)) = self.comps.split_last() else {
            return Ok(None);
        };
        let fd = open_beneath(&self.root, parent, OFlags::PATH | OFlags::DIRECTORY)
            .map_err(|e| fs_error("opening the parent of", &self.shown, e))?;
        Ok(Some((fd, name.as_str())))
    }

    /// Who owns what the host creates here: the owner of the sandbox's
    /// root (its id range's root with a user namespace), so root inside
    /// may change it.
    fn owner(&self) -> Result<(rustix::fs::Uid, rustix::fs::Gid)> {
        let st = rustix::fs::fstat(&self.root).map_err(|e| fs_error("stat", "/", e))?;
        Ok((
            rustix::fs::Uid::from_raw(st.st_uid),
            rustix::fs::Gid::from_raw(st.st_gid),
        ))
    }

    fn lstat(&self) -> Result<Stat> {
        match self.parent()? {
            None => rustix::fs::fstat(&self.root).map_err(|e| fs_error("stat", "/", e)),
            Some((dir, name)) => rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| fs_error("stat", &self.shown, e)),
        }
    }
}

fn file_type_of(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::Fifo,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::File,
    }
}

fn mtime_ms(st: &Stat) -> u64 {
    let secs = u64::try_from(st.st_mtime).unwrap_or(0);
    #[allow(clippy::unnecessary_cast)] // i64 on some targets
    let nanos = u64::try_from(st.st_mtime_nsec as i64).unwrap_or(0);
    secs.saturating_mul(1000) + nanos / 1_000_000
}

fn open_regular(t: &Target) -> Result<std::fs::File> {
    let fd = t.open_full(OFlags::RDONLY | OFlags::NONBLOCK)?;
    let st = rustix::fs::fstat(&fd).map_err(|e| fs_error("stat", &t.shown, e))?;
    if file_type_of(st.st_mode) != FileType::File {
        return Err(BackendError::invalid(format!(
            "{} is not a regular file",
            t.shown
        )));
    }
    Ok(std::fs::File::from(fd))
}

fn read(state: &State, id: &str, p: &str) -> Result<Vec<u8>> {
    let t = Target::open(state, id, p)?;
    let f = open_regular(&t)?;
    let mut out = Vec::new();
    f.take(MAX_READ + 1)
        .read_to_end(&mut out)
        .map_err(|e| BackendError::from_io(format!("reading {}", t.shown), &e))?;
    if out.len() as u64 > MAX_READ {
        return Err(BackendError::new(
            ErrorCode::Quota,
            format!("{} is larger than {MAX_READ} bytes", t.shown),
        ));
    }
    Ok(out)
}

fn read_range(state: &State, id: &str, p: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let t = Target::open(state, id, p)?;
    let f = open_regular(&t)?;
    let len = len.min(MAX_READ) as usize;
    let mut out = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match f.read_at(&mut out[got..], offset.saturating_add(got as u64)) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(BackendError::from_io(format!("reading {}", t.shown), &e)),
        }
    }
    out.truncate(got);
    Ok(out)
}

fn write(state: &State, id: &str, p: &str, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let t = Target::open(state, id, p)?;
    let Some((dir, name)) = t.parent()? else {
        return Err(BackendError::invalid("cannot write to /"));
    };
    let tmp = format!(".corral-tmp-{}", random_hex().unwrap_or_default());
    let fd = rustix::fs::openat(
        &dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| fs_error("writing", &t.shown, e))?;
    let result = (|| {
        let mut f = std::fs::File::from(fd);
        f.write_all(bytes)
            .map_err(|e| BackendError::from_io(format!("writing {}", t.shown), &e))?;
        // Before the mode: a change of owner clears set-id bits.
        let (uid, gid) = t.owner()?;
        rustix::fs::fchown(&f, Some(uid), Some(gid)).map_err(|e| fs_error("chown", &t.shown, e))?;
        rustix::fs::fchmod(&f, Mode::from_raw_mode(mode.unwrap_or(0o644) & 0o7777))
            .map_err(|e| fs_error("chmod", &t.shown, e))?;
        rustix::fs::renameat(&dir, tmp.as_str(), &dir, name)
            .map_err(|e| fs_error("writing", &t.shown, e))
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
    }
    result
}

fn stat(state: &State, id: &str, p: &str) -> Result<FileStat> {
    let t = Target::open(state, id, p)?;
    let st = t.lstat()?;
    Ok(FileStat {
        path: t.shown.clone(),
        file_type: file_type_of(st.st_mode),
        size: u64::try_from(st.st_size).unwrap_or(0),
        mode: st.st_mode & 0o7777,
        modified_at_ms: mtime_ms(&st),
    })
}

fn list(state: &State, id: &str, p: &str) -> Result<Vec<DirEntry>> {
    let t = Target::open(state, id, p)?;
    let fd = t.open_full(OFlags::RDONLY | OFlags::DIRECTORY)?;
    let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| fs_error("listing", &t.shown, e))?;
    let mut out = Vec::new();
    for entry in dir {
        let entry = entry.map_err(|e| fs_error("listing", &t.shown, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let path = if t.shown == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", t.shown)
        };
        out.push(DirEntry {
            name,
            path,
            file_type: file_type_of(st.st_mode),
            size: u64::try_from(st.st_size).unwrap_or(0),
            mode: st.st_mode & 0o7777,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn mkdir(state: &State, id: &str, p: &str, parents: bool) -> Result<()> {
    let t = Target::open(state, id, p)?;
    if t.comps.is_empty() {
        return if parents {
            Ok(())
        } else {
            Err(BackendError::new(ErrorCode::Conflict, "/ exists"))
        };
    }
    let upto = if parents { 1 } else { t.comps.len() };
    for n in upto..=t.comps.len() {
        let step = Target {
            root: t
                .root
                .try_clone()
                .map_err(|e| BackendError::from_io("dup", &e))?,
            comps: t.comps[..n].to_vec(),
            shown: format!("/{}", t.comps[..n].join("/")),
        };
        let Some((dir, name)) = step.parent()? else {
            continue;
        };
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {
                let (uid, gid) = t.owner()?;
                rustix::fs::chownat(&dir, name, Some(uid), Some(gid), AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| fs_error("chown", &step.shown, e))?;
            }
            Err(Errno::EXIST) if parents => {
                let st = step.lstat()?;
                if file_type_of(st.st_mode) != FileType::Directory {
                    return Err(BackendError::new(
                        ErrorCode::Conflict,
                        format!("{} exists and is not a directory", step.shown),
                    ));
                }
            }
            Err(e) => return Err(fs_error("mkdir", &step.shown, e)),
        }
    }
    Ok(())
}

fn remove(state: &State, id: &str, p: &str, recursive: bool) -> Result<()> {
    let t = Target::open(state, id, p)?;
    let Some((dir, name)) = t.parent()? else {
        return Err(BackendError::invalid("cannot remove /"));
    };
    let st = t.lstat()?;
    if file_type_of(st.st_mode) != FileType::Directory {
        return rustix::fs::unlinkat(&dir, name, AtFlags::empty())
            .map_err(|e| fs_error("removing", &t.shown, e));
    }
    if recursive {
        remove_tree(&dir, name).map_err(|e| fs_error("removing", &t.shown, e))
    } else {
        rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)
            .map_err(|e| fs_error("removing", &t.shown, e))
    }
}

/// Removes directory `name` of `parent` and everything in it, never
/// following a symlink.
fn remove_tree(parent: &impl AsFd, name: &str) -> rustix::io::Result<()> {
    let fd = rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let names: Vec<(String, bool)> = rustix::fs::Dir::read_from(&fd)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (n != "." && n != "..").then_some((n, e.file_type() == rustix::fs::FileType::Directory))
        })
        .collect();
    for (n, is_dir) in names {
        if is_dir {
            remove_tree(&fd, &n)?;
        } else {
            rustix::fs::unlinkat(&fd, n.as_str(), AtFlags::empty())?;
        }
    }
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    corral_backend::task::blocking("file task", f).await
}

#[async_trait]
impl FileOps for LinuxFiles {
    async fn read(&self, id: &str, p: &str) -> Result<Vec<u8>> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || read(&s, &id, &p)).await
    }

    async fn write(&self, id: &str, p: &str, bytes: &[u8], mode: Option<u32>) -> Result<()> {
        let (s, id, p, b) = (
            self.state.clone(),
            id.to_string(),
            p.to_string(),
            bytes.to_vec(),
        );
        blocking(move || write(&s, &id, &p, &b, mode)).await
    }

    async fn list(&self, id: &str, p: &str) -> Result<Vec<DirEntry>> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || list(&s, &id, &p)).await
    }

    async fn stat(&self, id: &str, p: &str) -> Result<FileStat> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || stat(&s, &id, &p)).await
    }

    async fn remove(&self, id: &str, p: &str, recursive: bool) -> Result<()> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || remove(&s, &id, &p, recursive)).await
    }

    async fn mkdir(&self, id: &str, p: &str, parents: bool) -> Result<()> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || mkdir(&s, &id, &p, parents)).await
    }

    fn ranged(&self) -> Option<&dyn RangedRead> {
        Some(self)
    }
}

#[async_trait]
impl RangedRead for LinuxFiles {
    async fn read_range(&self, id: &str, p: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (s, id, p) = (self.state.clone(), id.to_string(), p.to_string());
        blocking(move || read_range(&s, &id, &p, offset, len)).await
    }
}
