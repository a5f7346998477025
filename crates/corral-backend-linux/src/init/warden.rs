//! The warden: with a user namespace, the outer init gives up host root
//! (it becomes the first host id of its range, then root of its own user
//! namespace) — rootless, it leaves the host's mount namespace — so when a sandbox bound to its creator loses the creator no
//! process of the sandbox may remove what it holds on the host — its
//! record, its mounts, its directory under the state directory.
//!
//! The warden is forked before that, at the preparation, and keeps host
//! root in the host's namespaces. It holds nothing of the sandbox but one
//! pipe from the outer init, and does one thing: once the outer init has
//! told it the sandbox's root and then that the creator is gone, it waits
//! for the outer init to exit (PID 1, and with it every process of the
//! sandbox, is dead by then) and removes the host side as a destroy would.
//! Any other ending of the pipe (a sandbox not bound to its creator, a
//! destroy, an init that never got its go-ahead) ends the warden with
//! nothing done.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::sys::{self, Forked};

/// The byte that announces the sandbox's root, and the one that asks for
/// the host side to be removed.
const BOUND: u8 = b'B';
const RECLAIM: u8 = b'R';

/// The outer init's end of the pipe to its warden.
#[derive(Debug)]
pub struct Warden {
    tell: OwnedFd,
}

impl Warden {
    /// Forks the warden. Call while this process is still host root in the
    /// host's namespaces, before anything of the sandbox is made.
    pub fn start() -> std::io::Result<Warden> {
        let (hear, tell) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        match sys::fork()? {
            Forked::Child => {
                drop(tell);
                std::process::exit(watch(hear));
            }
            Forked::Parent(_) => {
                drop(hear);
                Ok(Warden { tell })
            }
        }
    }

    /// After the go-ahead: tells the warden the sandbox's `root` when the
    /// sandbox is bound to its creator; otherwise lets it go (it exits).
    pub fn arm(self, root: Option<&Path>) -> Option<Warden> {
        let root = root?;
        let mut message = vec![BOUND];
        message.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(root.as_os_str()));
        message.push(0);
        write_all(&self.tell, &message).ok()?;
        Some(self)
    }

    /// The creator is gone and PID 1 was reaped: the warden removes the
    /// host side once this process has exited.
    pub fn reclaim(self) {
        let _ = write_all(&self.tell, &[RECLAIM]);
    }
}

fn write_all(fd: &OwnedFd, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The warden's life: everything but the pipe closed, then the pipe read
/// to its end (the outer init's exit), then the host side removed when
/// that was asked for.
fn watch(hear: OwnedFd) -> i32 {
    // Its own name (`/proc/<pid>/comm`), not `corral-init`, so nothing
    // that looks for inits by name takes it for one.
    let _ = rustix::thread::set_name(c"corral-warden");
    // Not the startup socket (its end closing is how the host learns the
    // init is gone), not the id range's lock, nothing else of the init's.
    let hear = match sys::keep_only(hear) {
        Ok(fd) => fd,
        Err(_) => return 1,
    };
    let mut heard = Vec::new();
    if std::fs::File::from(hear).read_to_end(&mut heard).is_err() {
        return 1;
    }
    match root_to_reclaim(&heard) {
        Some(root) => {
            remove_host_side(&root);
            0
        }
        None => 0,
    }
}

/// What the outer init said: the sandbox's root, when it said it is bound
/// to its creator and then that the creator is gone.
fn root_to_reclaim(heard: &[u8]) -> Option<PathBuf> {
    let rest = heard.strip_prefix(&[BOUND])?;
    let end = rest.iter().position(|b| *b == 0)?;
    if rest.get(end + 1) != Some(&RECLAIM) {
        return None;
    }
    let root: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&rest[..end]);
    let root = PathBuf::from(root);
    // The outer init says this after it gave up host root: only the shape
    // of a sandbox's root (`<state>/linux/sandboxes/<id>/fs/root`, absolute,
    // no `..`) is ever removed, whatever a misbehaving init would send.
    let plain = root.components().all(|c| {
        matches!(
            c,
            std::path::Component::RootDir | std::path::Component::Normal(_)
        )
    });
    let shaped = root.is_absolute()
        && plain
        && root.ends_with("fs/root")
        && root
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .is_some_and(|sandboxes| sandboxes.ends_with("linux/sandboxes"));
    shaped.then_some(root)
}

/// Removes what sandbox `root` (`<sandbox dir>/fs/root`) holds on the host:
/// the record first (so it is no longer listed), then every mount under the
/// sandbox directory, then the directory — never through a mount. Best
/// effort: whatever is left is `gc`'s (the cgroup, any firewall table).
pub fn remove_host_side(root: &Path) {
    let Some(dir) = root.parent().and_then(Path::parent) else {
        return;
    };
    let _ = std::fs::remove_file(dir.join("meta.json"));
    // Rootless nothing is mounted on the host's side, and an unprivileged
    // unmount fails: the removal below still refuses while anything is
    // mounted under the directory.
    let _ = crate::rootfs::unmount_all(&dir.join("fs"));
    let _ = crate::rootfs::remove_unmounted(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bound_sandbox_whose_creator_is_gone_is_reclaimed() {
        let root = b"/state/linux/sandboxes/lx-1/fs/root";
        let bound = [&[BOUND][..], root, &[0]].concat();
        let gone = [&bound[..], &[RECLAIM]].concat();
        assert_eq!(
            root_to_reclaim(&gone),
            Some(PathBuf::from("/state/linux/sandboxes/lx-1/fs/root"))
        );
        assert_eq!(root_to_reclaim(&bound), None, "bound, creator alive");
        assert_eq!(root_to_reclaim(b""), None, "not bound, or no go-ahead");
        assert_eq!(
            root_to_reclaim(&[RECLAIM]),
            None,
            "a reclaim without a root"
        );
        for other in [
            &b"/"[..],
            b"/etc",
            b"/state/linux/sandboxes/../../etc/fs/root",
            b"state/linux/sandboxes/lx-1/fs/root",
            b"/state/linux/other/lx-1/fs/root",
        ] {
            let said = [&[BOUND][..], other, &[0, RECLAIM]].concat();
            let shown = String::from_utf8_lossy(other);
            assert_eq!(root_to_reclaim(&said), None, "{shown}");
        }
    }
}
