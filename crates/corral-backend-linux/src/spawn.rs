//! Starting `corral-init` from the host: a fork+exec of the small init
//! binary (never a fork of this large process that keeps running our code),
//! with the startup socket and the control listener on fixed descriptor
//! numbers, then the go-ahead and the wait for PID 1.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::init::{CONTROL_FD, STARTUP_FD};
use crate::protocol::{self, Go, InitConfig, Startup};

/// How long the host waits for the init to report ready.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

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

/// A started init, before the go-ahead.
#[derive(Debug)]
pub struct Started {
    /// The outer init process (a child of this process).
    pub child: Child,
    startup: UnixStream,
}

/// The name PID 1 runs under: its whole command line inside the sandbox
/// (`/proc/1/cmdline`), so it names no host path.
pub const INIT_NAME: &str = "corral-init";

/// Starts `binary` with no arguments and an empty environment, handing it
/// `listener` as its control socket; the configuration follows in [`go`].
pub fn start(binary: &Path, listener: &UnixListener) -> io::Result<Started> {
    let (ours, theirs) = UnixStream::pair()?;
    let theirs_fd = theirs.as_raw_fd();
    let listener_fd = listener.as_raw_fd();
    let mut cmd = std::process::Command::new(binary);
    cmd.arg0(INIT_NAME)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe calls (setsid, fcntl, dup2, close); the two
    // source descriptors are open in the parent for the whole spawn. Both
    // are first copied above the target numbers, so neither target
    // overwrites the other's source (dup2 also clears close-on-exec).
    unsafe {
        cmd.pre_exec(move || {
            let startup = libc::fcntl(theirs_fd, libc::F_DUPFD, 10);
            let control = libc::fcntl(listener_fd, libc::F_DUPFD, 10);
            if libc::setsid() < 0
                || startup < 0
                || control < 0
                || libc::dup2(startup, STARTUP_FD) < 0
                || libc::dup2(control, CONTROL_FD) < 0
                || libc::close(startup) < 0
                || libc::close(control) < 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(theirs);
    Ok(Started {
        child,
        startup: ours,
    })
}

/// Sends the go-ahead (the configuration and the seccomp program) and waits
/// for PID 1; returns PID 1's host pid.
pub fn go(started: &mut Started, cfg: &InitConfig, seccomp: &[u8]) -> io::Result<u32> {
    started.startup.set_read_timeout(Some(STARTUP_TIMEOUT))?;
    let go = Go {
        config: cfg.clone(),
        seccomp: seccomp.to_vec(),
    };
    protocol::send_with_fds(started.startup.as_fd(), &go, &[])?;
    let reply: Option<Startup> = protocol::read_frame(&mut started.startup)?;
    match reply {
        Some(Startup::Ready { pid }) => Ok(pid),
        Some(Startup::Failed { step, error }) => Err(io::Error::other(format!(
            "corral-init failed at {step}: {error}"
        ))),
        None => Err(io::Error::other(
            "corral-init exited before reporting ready",
        )),
    }
}

/// Reaps the outer init in the background when it exits, so it never
/// lingers as a zombie of this process.
pub fn reap_in_background(mut child: Child) {
    let _ = std::thread::Builder::new()
        .name("corral-init-reaper".into())
        .spawn(move || {
            let _ = child.wait();
        });
}
