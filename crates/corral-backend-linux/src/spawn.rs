//! Starting `corral-init` from the host: a fork+exec of the small init
//! binary (never a fork of this large process that keeps running our code),
//! with the startup socket as its stdin, no arguments and an empty
//! environment; then, once it is in the sandbox's cgroup, the
//! go-ahead with the configuration and the control listener, the wait for
//! PID 1, and the commit once the record is written.
//!
//! Inits are started ahead of demand by the [`pool`]; a create takes one
//! that already waits in its own cgroup, or starts one itself when none is
//! ready.
//!
//! Descriptor hygiene: the init runs from a [`sealed`] in-memory copy of
//! the binary, with exactly three descriptors set (the startup socket as
//! stdin, `/dev/null` as stdout and stderr); any other descriptor the
//! creator left without close-on-exec (a shell's `exec 7</`, a caller's
//! leaked file) still crosses `execve`, so the init closes everything above
//! stderr before it does anything else (`crate::init`).

pub mod oom;
pub mod pool;
pub mod sealed;

use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::host::InitLink;
use crate::protocol::{self, Commit, Go, InitConfig, Prepare, Startup};
use crate::userns::{IdRange, RangeClaim};

/// How long the host waits for the init to report ready.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// The name PID 1 runs under: its whole command line inside the sandbox
/// (`/proc/1/cmdline`), so it names no host path.
pub const INIT_NAME: &str = "corral-init";

/// Where the `corral-init` binary is: `$CORRAL_INIT`, else next to the
/// current executable, else in its parent directory (tests run from
/// `target/<profile>/deps`, the binary is in `target/<profile>`).
pub fn init_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CORRAL_INIT").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("corral-init"), dir.parent()?.join("corral-init")]
        .into_iter()
        .find(|p| p.is_file())
}

/// A started init, before the go-ahead: the link to it and the id range it
/// was started with. Dropping it closes the startup socket, on which the
/// init exits by itself (tearing down whatever it built, when that was
/// after the go-ahead).
#[derive(Debug)]
pub struct Started {
    /// The link to the init: the process, its startup socket and what it
    /// is handed with the go-ahead.
    pub link: InitLink,
    /// The sandbox's id range, when the init makes a user namespace.
    pub range: Option<IdRange>,
}

impl Started {
    /// Whether the init still waits (it has not exited).
    pub fn waiting(&mut self) -> bool {
        self.link.waiting()
    }

    /// The outer init's host pid.
    pub fn pid(&self) -> u32 {
        self.link.pid()
    }

    /// Stops the init: closes its startup socket, kills it and reaps it.
    pub fn stop(self) {
        self.link.stop();
    }
}

/// Starts `binary` with no arguments and an empty environment, the startup
/// socket as its stdin; the configuration and the control listener follow
/// in [`go`]. Nothing runs between fork and exec (the init makes itself a
/// session leader), so the standard library spawns it with `posix_spawn`:
/// a `vfork`-style clone that copies none of this process's memory map.
///
/// With `hygiene` (always, but for the bench's `linux without fd-hygiene`
/// row) the init runs from the [`sealed`] copy of `binary` and closes every
/// inherited descriptor above stderr; without it, it runs from `binary`
/// itself and is told ([`crate::protocol::KEEP_INHERITED_ENV`]) to close nothing.
///
/// The [`Prepare`] message is sent at once: with a range `claim`, the init
/// takes the range's first host id and makes its user namespace first
/// ([`map_user_namespace`]); the claim's lock goes with it.
pub fn start(binary: &Path, hygiene: bool, claim: Option<RangeClaim>) -> io::Result<Started> {
    let (ours, theirs) = UnixStream::pair()?;
    // Held until the spawn returns, so the copy stays open across `execve`.
    let copy = if hygiene {
        Some(sealed::sealed(binary)?)
    } else {
        None
    };
    let program = copy
        .as_ref()
        .map_or_else(|| binary.to_path_buf(), |c| c.exec_path());
    let mut command = std::process::Command::new(program);
    command.env_clear();
    if !hygiene {
        command.env(crate::protocol::KEEP_INHERITED_ENV, "1");
    }
    let child = command
        .arg0(INIT_NAME)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    drop(copy);
    oom::protect_init(child.id());
    let started = Started {
        link: InitLink::new(child, ours),
        range: claim.as_ref().map(|c| c.range),
    };
    let prepare = Prepare {
        user_namespace: claim.as_ref().map(|c| c.range.start()),
        rootless: claim.is_none() && crate::userns::rootless::active(),
    };
    let lock: Vec<_> = claim.iter().map(|c| c.lock.as_fd()).collect();
    if let Err(e) = protocol::send_with_fds(started.link.startup().as_fd(), &prepare, &lock) {
        started.stop();
        return Err(e);
    }
    Ok(started)
}

/// With a user namespace: waits until the init of `link` made it and
/// writes its id maps (sandbox root is `range`'s first host id). Returns
/// the namespace, for idmapped mounts.
pub fn map_user_namespace(link: &InitLink, range: IdRange) -> io::Result<std::fs::File> {
    wait_unshared(link)?;
    let pid = link.pid();
    crate::userns::map::write(pid, range)?;
    std::fs::File::open(format!("/proc/{pid}/ns/user"))
}

/// Rootless: waits until the init of `link` made its user namespace and
/// writes its id maps as this same user
/// ([`crate::userns::rootless::write_maps`]).
pub fn map_rootless_namespace(link: &InitLink) -> io::Result<()> {
    wait_unshared(link)?;
    crate::userns::rootless::write_maps(link.pid())
}

/// Waits for the init's [`Startup::Unshared`].
fn wait_unshared(link: &InitLink) -> io::Result<()> {
    let mut startup = link.startup();
    startup.set_read_timeout(Some(STARTUP_TIMEOUT))?;
    match protocol::read_frame::<Startup>(&mut startup)? {
        Some(Startup::Unshared {}) => {}
        Some(Startup::Failed { step, error }) => {
            return Err(io::Error::other(format!(
                "corral-init failed at {step}: {error}"
            )));
        }
        Some(_) | None => {
            return Err(io::Error::other(
                "corral-init did not make its user namespace",
            ));
        }
    }
    Ok(())
}

/// Sends the init of `link` the go-ahead (the configuration, the seccomp
/// program, the control listener and, with a user namespace, the root it
/// keeps) and waits for PID 1; returns PID 1's host pid.
pub fn go(link: &InitLink, cfg: &InitConfig, seccomp: &[u8]) -> io::Result<u32> {
    let go = Go {
        config: cfg.clone(),
        seccomp: seccomp.to_vec(),
    };
    let mut startup = link.startup();
    startup.set_read_timeout(Some(STARTUP_TIMEOUT))?;
    let (control, root) = link.kept();
    let control = control.ok_or_else(|| io::Error::other("no control socket was bound"))?;
    let mut fds = vec![control.as_fd()];
    fds.extend(root.map(|f| f.as_fd()));
    protocol::send_with_fds(startup.as_fd(), &go, &fds)?;
    let reply: Option<Startup> = protocol::read_frame(&mut startup)?;
    match reply {
        Some(Startup::Ready { pid }) => Ok(pid),
        Some(Startup::Unshared {}) => Err(io::Error::other(
            "corral-init answered the go-ahead out of order",
        )),
        Some(Startup::Failed { step, error }) => Err(io::Error::other(format!(
            "corral-init failed at {step}: {error}"
        ))),
        None => Err(io::Error::other(
            "corral-init exited before reporting ready",
        )),
    }
}

/// Tells the init of `link` its record is written: from now on the
/// sandbox outlives this process.
pub fn commit(link: &InitLink) -> io::Result<()> {
    protocol::send_with_fds(link.startup().as_fd(), &Commit {}, &[])
}

/// Reaps a committed init in the background when it exits, so it never
/// lingers as a zombie of this process. The startup socket stays open until
/// then: a sandbox bound to its creator ends when it closes, which is when
/// this process ends.
pub fn reap_in_background(started: Started) {
    let (mut child, startup) = started.link.into_parts();
    let _ = std::thread::Builder::new()
        .name("corral-init-reaper".into())
        .spawn(move || {
            let _ = child.wait();
            drop(startup);
        });
}
