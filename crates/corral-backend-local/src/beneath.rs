//! Resolving sandbox paths beneath a sandbox's `root/` to descriptors, for
//! the primitives that change the tree (write, mkdir, remove) and those that
//! need a directory (list, the working directory of a command).
//!
//! Resolution is the kernel's: `openat2(root_fd, path,
//! RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, the same flags the shared
//! contained reads use. A `..`, an absolute symlink or a relative symlink
//! climbing out of the root is refused (`EXDEV`), never followed. A name is
//! then created, renamed or unlinked relative to the resolved parent
//! directory's descriptor, with `O_NOFOLLOW` where a final symlink could
//! redirect it. Where `openat2` is unavailable (old kernel, seccomp), a
//! component walk with `O_NOFOLLOW` is used instead, which refuses *every*
//! symlink on the way (stricter than the kernel's rule, never looser).

use std::path::Path;

use corral_backend::contained::{ContainedReadError, ContainmentReason, Strategy};
use corral_backend::{BackendError, ErrorCode, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// The resolve flags of every lookup (the contained reads use the same).
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// A sandbox's `root/`, held open as a directory descriptor.
#[derive(Debug)]
pub(crate) struct SandboxRoot {
    fd: OwnedFd,
    strategy: Strategy,
}

impl SandboxRoot {
    /// Opens the host directory `root` (trusted: it comes from the state
    /// directory, not from the sandbox).
    pub(crate) fn open(root: &Path, id: &str) -> Result<Self> {
        let fd = rustix::fs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT | Errno::NOTDIR => BackendError::sandbox_not_found(id),
            e => BackendError::new(
                ErrorCode::Io,
                format!("opening the file system of sandbox {id}: {e}"),
            ),
        })?;
        Ok(SandboxRoot {
            fd,
            strategy: Strategy::detect(),
        })
    }

    /// Forces a resolution strategy (tests cover both).
    #[cfg(test)]
    fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Resolves the normalized components `comps` beneath the root and opens
    /// the result with `flags` (`O_CLOEXEC` is added). With `follow_final`
    /// false a final symlink is opened itself (`flags` should then hold
    /// `O_PATH`).
    pub(crate) fn open_at(
        &self,
        comps: &[String],
        flags: OFlags,
        follow_final: bool,
    ) -> std::result::Result<OwnedFd, Errno> {
        let mut flags = flags | OFlags::CLOEXEC;
        if !follow_final {
            flags |= OFlags::NOFOLLOW;
        }
        match self.strategy {
            Strategy::Openat2 => {
                let rel = if comps.is_empty() {
                    ".".to_string()
                } else {
                    comps.join("/")
                };
                corral_backend::contained::openat2_retrying(
                    &self.fd,
                    rel.as_str(),
                    flags,
                    Mode::empty(),
                    RESOLVE,
                )
            }
            Strategy::NoFollowWalk => self.walk(comps, flags),
        }
    }

    /// The fallback without `openat2`: every component opened with
    /// `O_NOFOLLOW` relative to the previous one; any symlink is refused.
    fn walk(&self, comps: &[String], flags: OFlags) -> std::result::Result<OwnedFd, Errno> {
        let Some((last, dirs)) = comps.split_last() else {
            return rustix::fs::openat(&self.fd, ".", flags, Mode::empty());
        };
        let mut cur: Option<OwnedFd> = None;
        for name in dirs {
            let at = cur.as_ref().map_or(self.fd.as_fd(), AsFd::as_fd);
            let next = rustix::fs::openat(
                at,
                name.as_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            match FileType::from_raw_mode(rustix::fs::fstat(&next)?.st_mode) {
                FileType::Directory => cur = Some(next),
                FileType::Symlink => return Err(Errno::XDEV),
                _ => return Err(Errno::NOTDIR),
            }
        }
        let at = cur.as_ref().map_or(self.fd.as_fd(), AsFd::as_fd);
        // Look at the final object first, through `O_PATH`, without following it.
        let probe = rustix::fs::openat(
            at,
            last.as_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if FileType::from_raw_mode(rustix::fs::fstat(&probe)?.st_mode) == FileType::Symlink {
            return if !flags.contains(OFlags::NOFOLLOW) {
                Err(Errno::XDEV)
            } else if flags.contains(OFlags::PATH) && !flags.contains(OFlags::DIRECTORY) {
                Ok(probe)
            } else {
                Err(Errno::LOOP)
            };
        }
        // Then open it as asked; a name swapped for a symlink meanwhile fails.
        rustix::fs::openat(at, last.as_str(), flags | OFlags::NOFOLLOW, Mode::empty())
            .map_err(|e| if e == Errno::LOOP { Errno::XDEV } else { e })
    }

    /// The directory holding the last of `comps`, as an `O_PATH` descriptor,
    /// and that last name. `invalid_input` for the root itself.
    pub(crate) fn parent_of<'c>(
        &self,
        op: &str,
        comps: &'c [String],
        shown: &str,
    ) -> Result<(OwnedFd, &'c str)> {
        let Some((name, parent)) = comps.split_last() else {
            return Err(BackendError::invalid(format!(
                "{op} {shown}: not possible on /"
            )));
        };
        let dir = self
            .open_at(parent, OFlags::PATH | OFlags::DIRECTORY, true)
            .map_err(|e| fs_error(op, shown, e))?;
        Ok((dir, name.as_str()))
    }
}

/// A failed system call of a file primitive as a backend error, naming the
/// sandbox path (never the host path behind it).
pub(crate) fn fs_error(op: &str, shown: &str, errno: Errno) -> BackendError {
    let (code, why) = match errno {
        Errno::NOENT => (ErrorCode::NotFound, "no such file or directory".to_string()),
        Errno::NOTDIR => (
            ErrorCode::NotFound,
            "a component of the path is not a directory".to_string(),
        ),
        Errno::XDEV => (
            ErrorCode::InvalidInput,
            "the path resolves outside the sandbox (a symlink or `..` leaves its root)".to_string(),
        ),
        Errno::LOOP => (
            ErrorCode::InvalidInput,
            "too many levels of symlinks, or a refused link".to_string(),
        ),
        Errno::EXIST => (ErrorCode::Conflict, "it already exists".to_string()),
        Errno::ISDIR => (ErrorCode::InvalidInput, "it is a directory".to_string()),
        Errno::NOTEMPTY => (
            ErrorCode::Conflict,
            "the directory is not empty".to_string(),
        ),
        Errno::NAMETOOLONG => (ErrorCode::InvalidInput, "the name is too long".to_string()),
        Errno::NOSPC | Errno::DQUOT => (ErrorCode::Quota, "no space left".to_string()),
        Errno::ROFS => (ErrorCode::Io, "read-only file system".to_string()),
        e => (ErrorCode::Io, e.to_string()),
    };
    BackendError::new(code, format!("{op} {shown}: {why}"))
}

/// A refused contained read (or stat) as a backend error, naming the
/// sandbox path.
pub(crate) fn contained_error(op: &str, shown: &str, err: &ContainedReadError) -> BackendError {
    let (code, why) = match err.reason {
        ContainmentReason::NotFound => (ErrorCode::NotFound, "no such file".to_string()),
        ContainmentReason::OutsideRoot => (
            ErrorCode::InvalidInput,
            "the path resolves outside the sandbox (a symlink or `..` leaves its root)".to_string(),
        ),
        ContainmentReason::NotRegularFile { kind } => (
            ErrorCode::InvalidInput,
            format!("it is a {kind}, not a regular file"),
        ),
        ContainmentReason::ChangedDuringRead => (
            ErrorCode::Conflict,
            "the file was replaced while it was being opened".to_string(),
        ),
        ContainmentReason::RootUnavailable { .. } => (
            ErrorCode::NotFound,
            "the sandbox's file system is gone".to_string(),
        ),
        ContainmentReason::Io { errno } => (
            ErrorCode::Io,
            std::io::Error::from_raw_os_error(errno).to_string(),
        ),
        other => (ErrorCode::InvalidInput, other.to_string()),
    };
    BackendError::new(code, format!("{op} {shown}: {why}"))
}

/// `parent` + `/` + `name` as a sandbox path.
pub(crate) fn join_shown(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comps(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn both_strategies_stay_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("a/up")).unwrap();
        std::os::unix::fs::symlink("b", root.join("a/alias")).unwrap();
        let mut strategies = vec![Strategy::NoFollowWalk];
        if Strategy::detect() == Strategy::Openat2 {
            strategies.push(Strategy::Openat2);
        }
        for strategy in strategies {
            let r = SandboxRoot::open(&root, "t")
                .unwrap()
                .with_strategy(strategy);
            let dir_flags = OFlags::PATH | OFlags::DIRECTORY;
            assert!(
                r.open_at(&comps("a/b"), dir_flags, true).is_ok(),
                "{strategy:?}"
            );
            assert!(r.open_at(&[], dir_flags, true).is_ok(), "{strategy:?}");
            assert!(r.open_at(&comps("a/b/f"), OFlags::PATH, false).is_ok());
            assert_eq!(
                r.open_at(&comps("a/x"), dir_flags, true).unwrap_err(),
                Errno::NOENT
            );
            assert_eq!(
                r.open_at(&comps("out/x"), OFlags::PATH, true).unwrap_err(),
                Errno::XDEV
            );
            assert_eq!(
                r.open_at(&comps("out"), dir_flags, true).unwrap_err(),
                Errno::XDEV
            );
            assert_eq!(
                r.open_at(&comps("a/up/x"), OFlags::PATH, true).unwrap_err(),
                Errno::XDEV
            );
            // A final symlink not followed is the link itself.
            let link = r.open_at(&comps("out"), OFlags::PATH, false).unwrap();
            let st = rustix::fs::fstat(&link).unwrap();
            assert_eq!(FileType::from_raw_mode(st.st_mode), FileType::Symlink);
            // Inner symlinks: followed by the kernel, refused by the walk.
            let inner = r.open_at(&comps("a/alias/f"), OFlags::PATH, true);
            match strategy {
                Strategy::Openat2 => assert!(inner.is_ok()),
                Strategy::NoFollowWalk => assert_eq!(inner.unwrap_err(), Errno::XDEV),
            }
        }
    }
}
