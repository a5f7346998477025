//! `corral-init`: the sandbox's init, in two stages.
//!
//! The **outer** stage is the process the host starts (fork+exec of this
//! small binary), often ahead of demand (`crate::spawn::pool`). On the
//! host's [`Prepare`] it drops host root for its sandbox's id range and
//! makes a user namespace first ([`crate::userns`]; the host then writes
//! its maps), and with it, owned by it, its new network (with loopback
//! up), uts and ipc namespaces at once,
//! then waits for the host's [`Go`] — sent once it sits in the sandbox's
//! cgroup, so every descendant is contained — then `unshare`s new mount
//! and cgroup namespaces, builds the root and pivots into it
//! ([`crate::rootfs`]), sets the hostname, `unshare`s a new pid namespace and forks. The child is
//! **PID 1** of that namespace: it dies with the outer stage
//! (`PR_SET_PDEATHSIG`), mounts `/proc`, puts on itself once what every
//! process of the sandbox inherits — the signal dispositions, the
//! capability bounding set, `no_new_privs` and the seccomp filter
//! (`inherited`) — and serves the control socket (`serve`). The outer
//! stage reports PID 1's host pid to the host and waits for the host's
//! [`Commit`] (the record is written): when the
//! startup socket closes first, the host died mid-create and it kills
//! PID 1 — and with it the whole sandbox — itself. Then it waits for PID 1
//! and exits with its status.
//!
//! The one descriptor from the host is the startup socketpair, as stdin
//! ([`STARTUP_FD`]; moved off it at once, `/dev/null` taking its place);
//! the listening control socket comes attached to the go-ahead. The configuration ([`InitConfig`]) arrives with the go-ahead
//! too, never on the command line: PID 1's `/proc/1/cmdline` is visible
//! inside the sandbox and must name no host path.

mod capabilities;
mod child;
mod creator;
pub(crate) mod filter;
mod inherited;
mod limits;
mod rootless;
mod serve;
// One of the crate's only two modules allowed `unsafe` (the other is the
// host side's `crate::sys`): the init's raw system calls.
#[allow(unsafe_code)]
pub(crate) mod sys;
mod warden;

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::thread::UnshareFlags;

use crate::protocol::{self, Commit, Go, InitConfig, Prepare, Startup};
use sys::Forked;

/// The descriptor number the startup socket arrives on in corral-init:
/// stdin, so the host needs no code between fork and exec to place it.
pub const STARTUP_FD: i32 = 0;

pub use crate::protocol::KEEP_INHERITED_ENV;

/// Whether this init sweeps descriptors (see [`main`]); PID 1 inherits it
/// across the fork and its exec children honour it (`child`).
static HYGIENE: AtomicBool = AtomicBool::new(true);

fn hygiene() -> bool {
    HYGIENE.load(Ordering::Relaxed)
}

/// corral-init's `main`: returns the process exit code.
///
/// First of all it closes every descriptor above stderr: whatever the
/// creator of the sandbox left open without close-on-exec (`exec 7</` in a
/// shell, then `corral run`) would otherwise reach PID 1 and every process
/// of the sandbox, with the host's files behind it. Then it names itself
/// `corral-init` (it runs from a sealed memfd, `crate::spawn::sealed`, whose
/// `/proc/self/fd/<n>` path would name it `<n>`).
pub fn main() -> i32 {
    if std::env::var_os(KEEP_INHERITED_ENV).is_some() {
        HYGIENE.store(false, Ordering::Relaxed);
    } else if let Err(e) = sys::above_stderr(sys::Sweep::Close) {
        eprintln!("corral-init: closing inherited descriptors: {e}");
        return 2;
    }
    let _ = rustix::thread::set_name(c"corral-init");
    if std::env::args_os().len() > 1 {
        eprintln!("corral-init: run by the linux backend only (it takes no arguments)");
        return 2;
    }
    let Ok(startup) = sys::take_startup_socket(STARTUP_FD) else {
        eprintln!("corral-init: run by the linux backend only (stdin is not its socket)");
        return 2;
    };
    // A session of its own (the host spawns it without running anything
    // between fork and exec), so no terminal signal of the host reaches it.
    if let Err(e) = rustix::process::setsid() {
        return fail(&startup, "setsid", e);
    }
    outer(startup)
}

fn fail(startup: &OwnedFd, step: &str, error: impl std::fmt::Display) -> i32 {
    let msg = Startup::Failed {
        step: step.to_string(),
        error: error.to_string(),
    };
    let _ = send(startup, &msg);
    1
}

fn send(sock: &OwnedFd, msg: &Startup) -> std::io::Result<()> {
    protocol::send_with_fds(sock.as_fd(), msg, &[])
}

/// Reads one frame of type `T` from the startup socket, with the
/// descriptors attached to it; `Ok(None)` when the host closed it first.
fn receive<T: for<'de> serde::Deserialize<'de>>(
    startup: &OwnedFd,
) -> std::io::Result<Option<(T, Vec<OwnedFd>)>> {
    let mut buf = Vec::new();
    let mut fds = Vec::new();
    loop {
        if let Some((msg, _)) = protocol::decode::<T>(&buf)? {
            return Ok(Some((msg, fds)));
        }
        if protocol::recv_with_fds(startup.as_fd(), &mut buf, &mut fds)? == 0 {
            return Ok(None);
        }
    }
}

/// The namespaces made before the go-ahead, while the init may still wait
/// in the pool. The mount namespace waits for the go-ahead (it must see the
/// sandbox's root, which the host mounts later), and so does the cgroup
/// one (it must start at the sandbox's cgroup, which the host moves this
/// process into after starting it).
///
/// With a user namespace it is made first, in the same call, so that it
/// owns every other namespace: root inside has capabilities over them and
/// none over the host's.
///
/// Before that the init drops host root for `user_namespace`, the first
/// host id of its range: the namespace is then owned by that id, and
/// whatever the kernel counts per user (inotify instances, processes,
/// user namespaces) is counted against it, never against host root.
///
/// Rootless, the user namespace is made as the caller, who is no root.
fn unshare_early(
    user_namespace: Option<u32>,
    rootless: bool,
) -> Result<(), (&'static str, std::io::Error)> {
    let mut flags = UnshareFlags::NEWUTS | UnshareFlags::NEWIPC | UnshareFlags::NEWNET;
    if let Some(host_id) = user_namespace {
        crate::userns::drop_host_root(host_id).map_err(|e| ("dropping host root", e))?;
        flags |= UnshareFlags::NEWUSER;
    }
    if rootless {
        flags |= UnshareFlags::NEWUSER;
    }
    sys::unshare_namespaces(flags).map_err(|e| ("unshare", e))?;
    sys::loopback_up().map_err(|e| ("bringing up loopback", e))
}

fn outer(startup: OwnedFd) -> i32 {
    if let Err(e) = limits::apply() {
        return fail(&startup, "setrlimit(RLIMIT_NOFILE)", e);
    }
    // With a user namespace, the locked claim of its id range: kept open
    // by this outer stage, out of the sandbox's reach, while it lives.
    let (user_namespace, rootless, range_lock) = match receive::<Prepare>(&startup) {
        Ok(Some((prepare, fds))) => (prepare.user_namespace, prepare.rootless, fds),
        Ok(None) => return 1,
        Err(e) => return fail(&startup, "reading the preparation", e),
    };
    // With a user namespace this stage gives up host root below (rootless,
    // the host's namespaces); the warden keeps them, for a sandbox whose
    // creator goes away.
    let warden = match (user_namespace.is_some() || rootless).then(warden::Warden::start) {
        None => None,
        Some(Ok(w)) => Some(w),
        Some(Err(e)) => return fail(&startup, "starting the warden", e),
    };
    let early = unshare_early(user_namespace, rootless);
    if user_namespace.is_some() || rootless {
        // The host writes the id maps on this answer.
        match &early {
            Ok(()) => {
                if send(&startup, &Startup::Unshared {}).is_err() {
                    return 1;
                }
            }
            Err((step, e)) => return fail(&startup, step, e),
        }
    }
    let (go, listener, root_dir) = match receive::<Go>(&startup) {
        // The host closed the socket: it no longer needs this init.
        Ok(None) => return 1,
        Ok(Some((go, fds))) if fds.len() == 1 + usize::from(user_namespace.is_some()) => {
            let mut fds = fds.into_iter();
            match (fds.next(), fds.next()) {
                (Some(listener), root_dir) => (go, listener, root_dir),
                (None, _) => return 1,
            }
        }
        Ok(Some((_, fds))) => {
            let e = format!("{} descriptors instead of the control socket", fds.len());
            return fail(&startup, "reading the go-ahead", e);
        }
        Err(e) => return fail(&startup, "reading the go-ahead", e),
    };
    let cfg: &InitConfig = &go.config;
    if let Err((step, e)) = early {
        return fail(&startup, step, e);
    }
    // Who removes the host side of a sandbox whose creator is gone: the
    // warden with a user namespace, else this stage from the host's mount
    // namespace.
    let warden = warden.and_then(|w| w.arm(cfg.bound_to_creator.then(|| Path::new(&cfg.root))));
    let host_mounts = (warden.is_none() && cfg.bound_to_creator && !rootless)
        .then(creator::HostMounts::open)
        .flatten();
    if let Err(e) = enter_root(cfg, root_dir) {
        return fail(&startup, &e.step, e.error);
    }
    if let Err(e) = rustix::system::sethostname(cfg.hostname.as_bytes()) {
        return fail(&startup, "sethostname", e);
    }
    // NEWPID only affects children.
    if let Err(e) = sys::unshare_namespaces(UnshareFlags::NEWPID) {
        return fail(&startup, "unshare(pid)", e);
    }
    let (ready_r, ready_w) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => return fail(&startup, "pipe", e),
    };
    let child = match sys::fork() {
        Err(e) => return fail(&startup, "fork", e),
        Ok(Forked::Child) => {
            if cfg.rootless.is_some()
                && let Err(e) = rootless::seal_pid1()
            {
                std::process::exit(fail(&startup, "making PID 1 undumpable", e));
            }
            drop(range_lock);
            drop(ready_r);
            // The host's mount namespace and the warden are the outer
            // stage's alone.
            drop(host_mounts);
            drop(warden);
            let deadline = cfg
                .lifetime_ms
                .map(|ms| std::time::Instant::now() + std::time::Duration::from_millis(ms));
            let code = pid1(startup, listener, ready_w, go.seccomp, deadline);
            std::process::exit(code);
        }
        Ok(Forked::Parent(pid)) => pid,
    };
    drop(ready_w);
    drop(listener);
    let mut byte = [0u8; 1];
    let ready = matches!(rustix::io::read(&ready_r, &mut byte), Ok(1))
        && send(&startup, &Startup::Ready { pid: child as u32 }).is_ok();
    // Until the record is written the sandbox lives only as long as its
    // creator: anything but the commit ends it.
    let committed = ready && matches!(receive::<Commit>(&startup), Ok(Some(_)));
    if committed
        && cfg.bound_to_creator
        && creator::watch(&startup, child) == creator::Watched::CreatorGone
    {
        drop(startup);
        let code = wait_for(child);
        if let Some(warden) = warden {
            warden.reclaim();
        } else if let Some(host) = host_mounts {
            host.reclaim(Path::new(&cfg.root));
        }
        return code;
    }
    drop(startup);
    if !committed && let Some(pid) = rustix::process::Pid::from_raw(child) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    wait_for(child)
}

/// After the go-ahead: new mount and cgroup namespaces, and the sandbox's
/// root entered. With a user namespace (`root_dir` is then the root,
/// opened by the host) the init first becomes its root, and enters the
/// root through the descriptor: as the range's host id it may not search
/// the state directory.
fn enter_root(cfg: &InitConfig, root_dir: Option<OwnedFd>) -> Result<(), crate::rootfs::StepError> {
    if let Some(layer) = &cfg.rootless {
        return rootless::enter_root(cfg, layer);
    }
    let step = |step: &str| {
        let step = step.to_string();
        move |error: std::io::Error| crate::rootfs::StepError { step, error }
    };
    if root_dir.is_some() {
        crate::userns::become_root().map_err(step("becoming root of the user namespace"))?;
    }
    if let Some(dir) = &root_dir {
        // The working directory moves into the new mount namespace with it.
        rustix::process::fchdir(dir).map_err(|e| step("entering the root")(e.into()))?;
    }
    let flags = UnshareFlags::NEWNS | UnshareFlags::NEWCGROUP;
    sys::unshare_namespaces(flags).map_err(step("unshare"))?;
    match root_dir {
        Some(_) => crate::rootfs::enter_cwd(Path::new(&cfg.root), &cfg.host_dirs),
        None => crate::rootfs::enter(Path::new(&cfg.root), &cfg.host_dirs),
    }
}

fn wait_for(child: i32) -> i32 {
    let Some(pid) = rustix::process::Pid::from_raw(child) else {
        return 1;
    };
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => {
                return status
                    .exit_status()
                    .or(status.terminating_signal().map(|s| 128 + s))
                    .unwrap_or(1);
            }
            Err(rustix::io::Errno::INTR) => continue,
            _ => return 1,
        }
    }
}

fn pid1(
    startup: OwnedFd,
    listener: OwnedFd,
    ready: OwnedFd,
    seccomp: Vec<u8>,
    deadline: Option<std::time::Instant>,
) -> i32 {
    if let Err(e) =
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
    {
        return fail(&startup, "PR_SET_PDEATHSIG", e);
    }
    if let Err(e) = crate::rootfs::mount_proc() {
        return fail(&startup, &e.step, e.error);
    }
    let sigfd = match sys::sigchld_fd() {
        Ok(fd) => fd,
        Err(e) => return fail(&startup, "signalfd", e),
    };
    // Last of the setup, before the first spawn: what every process of the
    // sandbox inherits from here on, the seccomp filter among it.
    if let Err(e) = inherited::apply(&seccomp) {
        return fail(&startup, e.step, e.source);
    }
    drop(startup);
    if rustix::io::write(&ready, b"r").is_err() {
        return 1;
    }
    drop(ready);
    serve::Pid1::new(listener, sigfd, deadline).run()
}
