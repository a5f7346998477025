//! Strategy 2: a component-by-component walk for kernels without `openat2`.
//!
//! Every step is taken relative to a descriptor we already hold, so no name is
//! ever looked up twice and nothing can be swapped between a check and a use:
//!
//! * each component is opened with `openat(dir, name, O_PATH | O_NOFOLLOW)`
//!   relative to the directory descriptor of the previous step, and its type
//!   is read from that very descriptor with `fstat`;
//! * a symlink is read with `readlinkat(link_fd, "")`, i.e. the target of the
//!   link inode we just inspected, not of whatever the name points to now; an
//!   absolute target is refused as `outside_root` (matching `RESOLVE_BENEATH`),
//!   a relative target is spliced into the remaining components and resolved
//!   from the directory holding the link;
//! * `..` never asks the kernel: the walk keeps the stack of directory
//!   descriptors it descended through (symlinks are expanded into components,
//!   so the stack is the physical path) and pops it; popping the root is
//!   `outside_root`;
//! * every symlink living on procfs is refused as `outside_root` before it is
//!   read. That covers all magic links (`/proc/<pid>/root`, `fd/<n>`, …) and is
//!   stricter than the kernel's `RESOLVE_NO_MAGICLINKS`, which would still
//!   follow plain procfs links such as `/proc/self`;
//! * more than 40 symlinks in one resolution is `symlink_loop`, as in the kernel;
//! * under [`Resolution::InRoot`] an absolute target restarts at the root
//!   (the stack is emptied) and `..` at the root stays there, exactly as
//!   `RESOLVE_IN_ROOT` does; nothing else changes.
//!
//! Nothing is opened for reading here: the result is an `O_PATH` descriptor.

use super::{ContainmentReason, Resolution};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// The kernel's `MAXSYMLINKS`.
pub(super) const MAX_SYMLINK_HOPS: u32 = 40;

/// The outcome of a successful walk.
#[derive(Debug)]
pub(super) struct Walked {
    /// `O_PATH` descriptor of the resolved object.
    pub(super) fd: OwnedFd,
    /// The directory holding the final object and its name there, when the
    /// path ended in a name (not in `.`/`..`): lets the fallback without
    /// procfs open exactly that name again, one lookup in a pinned directory.
    pub(super) parent: Option<(OwnedFd, Vec<u8>)>,
}

/// Splits `path` into components, in order.
///
/// Empty components are dropped, except that a trailing slash becomes a
/// final `.`, so that `file/` fails like the kernel's `ENOTDIR` and `dir/`
/// resolves to the directory.
pub(super) fn components(path: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    if path.ends_with(b"/") && !out.is_empty() {
        out.push(b".".to_vec());
    }
    out
}

/// Whether `fd` lives on a procfs instance.
fn on_procfs(fd: BorrowedFd<'_>) -> Result<bool, ContainmentReason> {
    let fs = rustix::fs::fstatfs(fd).map_err(|e| ContainmentReason::Io {
        errno: e.raw_os_error(),
    })?;
    Ok(fs.f_type == rustix::fs::PROC_SUPER_MAGIC)
}

fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, ContainmentReason> {
    fd.try_clone_to_owned()
        .map_err(|e| ContainmentReason::from_io(&e))
}

fn fstat_type(fd: BorrowedFd<'_>) -> Result<FileType, ContainmentReason> {
    rustix::fs::fstat(fd)
        .map(|st| FileType::from_raw_mode(st.st_mode))
        .map_err(|e| ContainmentReason::Io {
            errno: e.raw_os_error(),
        })
}

/// Resolves `rel` (already relative, validated) beneath `root`.
///
/// With `follow_final` false a final symlink is returned itself.
pub(super) fn resolve(
    root: BorrowedFd<'_>,
    rel: &[u8],
    follow_final: bool,
    resolution: Resolution,
) -> Result<Walked, ContainmentReason> {
    let in_root = resolution == Resolution::InRoot;
    // Pending components, last to process on top.
    let mut pending = components(rel);
    pending.reverse();
    if pending.is_empty() {
        pending.push(b".".to_vec());
    }
    // Directories descended into below the root, innermost last.
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut hops = 0u32;

    while let Some(name) = pending.pop() {
        let is_last = pending.is_empty();
        let cur = stack.last().map_or(root, AsFd::as_fd);
        match name.as_slice() {
            b"." => {
                if is_last {
                    return Ok(Walked {
                        fd: dup(cur)?,
                        parent: None,
                    });
                }
            }
            b".." => {
                if stack.pop().is_none() && !in_root {
                    return Err(ContainmentReason::OutsideRoot);
                }
                if is_last {
                    let cur = stack.last().map_or(root, AsFd::as_fd);
                    return Ok(Walked {
                        fd: dup(cur)?,
                        parent: None,
                    });
                }
            }
            _ => {
                let fd = rustix::fs::openat(
                    cur,
                    name.as_slice(),
                    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(ContainmentReason::from_resolve_errno)?;
                match fstat_type(fd.as_fd())? {
                    FileType::Symlink if !is_last || follow_final => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(ContainmentReason::SymlinkLoop);
                        }
                        if on_procfs(fd.as_fd())? {
                            return Err(ContainmentReason::OutsideRoot);
                        }
                        // The target of *this* link inode, not of the name.
                        let target = rustix::fs::readlinkat(&fd, "", Vec::new())
                            .map_err(ContainmentReason::from_resolve_errno)?;
                        let target = target.as_bytes();
                        if target.is_empty() {
                            return Err(ContainmentReason::NotFound);
                        }
                        if target.starts_with(b"/") {
                            if !in_root {
                                return Err(ContainmentReason::OutsideRoot);
                            }
                            stack.clear();
                        }
                        let mut spliced = components(target);
                        spliced.reverse();
                        pending.extend(spliced);
                        if pending.is_empty() {
                            pending.push(b".".to_vec());
                        }
                    }
                    FileType::Directory if !is_last => stack.push(fd),
                    _ if !is_last => return Err(ContainmentReason::NotFound),
                    _ => {
                        return Ok(Walked {
                            fd,
                            parent: Some((dup(cur)?, name)),
                        });
                    }
                }
            }
        }
    }
    // Unreachable in practice: the loop returns when the last component is
    // consumed. Refuse rather than guess.
    Err(ContainmentReason::NotFound)
}

/// Opens `name` in the pinned directory `dir` for reading, for the fallback
/// without procfs. One lookup, never following a symlink, never blocking.
pub(super) fn open_for_read(
    dir: BorrowedFd<'_>,
    name: &[u8],
) -> Result<OwnedFd, ContainmentReason> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| match errno {
        // The first lookup found a regular file; a symlink (`ELOOP` under
        // `O_NOFOLLOW`) or a socket (`ENXIO`) now means the name was swapped.
        Errno::LOOP | Errno::NXIO => ContainmentReason::ChangedDuringRead,
        other => ContainmentReason::from_resolve_errno(other),
    })
}

#[cfg(test)]
mod tests {
    use super::components;

    fn comps(path: &str) -> Vec<String> {
        components(path.as_bytes())
            .into_iter()
            .map(|c| String::from_utf8(c).expect("utf8"))
            .collect()
    }

    #[test]
    fn splitting_keeps_dots_and_marks_trailing_slash() {
        assert_eq!(comps("a/b"), ["a", "b"]);
        assert_eq!(comps("a//b/"), ["a", "b", "."]);
        assert_eq!(comps("./a/../b"), [".", "a", "..", "b"]);
        assert_eq!(comps(""), Vec::<String>::new());
        assert_eq!(comps("/"), Vec::<String>::new());
        assert_eq!(comps("dir/"), ["dir", "."]);
    }
}
