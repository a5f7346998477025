//! What PID 1 puts on itself once, after its own setup and before it serves
//! its first spawn, so that every process of the sandbox inherits it
//! through `fork` instead of setting it again between `fork` and `execve`:
//!
//! - the signal dispositions: every signal PID 1 inherited as ignored is
//!   set back to its default, but [`IGNORED_BY_PID1`], which each child
//!   resets itself (`SIG_IGN` survives `execve`; a caught signal does not);
//! - the execution domain (`personality(PER_LINUX)`) and the file mode
//!   mask (`022`), whatever the creator ran under;
//! - the capability bounding set ([`super::capabilities`]);
//! - `PR_SET_NO_NEW_PRIVS` and the seccomp filter ([`super::filter`]).
//!
//! Each of them is copied by `fork` and kept by `execve`, and PID 1 never
//! changes them again, so a workload starts with exactly what it had when
//! each child set them itself. PID 1 being under the filter only tightens
//! the model: it runs inside the sandbox, and nothing a workload can make
//! it do reaches a system call the filter refuses. What PID 1 itself makes
//! from here on (the audit, one line each):
//!
//! | system call | where | under the filter |
//! |---|---|---|
//! | `ppoll`, `accept4`, `recvmsg`, `sendmsg`, `sendto`, `read`, `write`, `close` | the control loop (`serve`) | allowed |
//! | `wait4`, `kill` (a group, `-1` at shutdown or the lifetime's end) | reaping, signals, `Shutdown` | allowed |
//! | `openat` of `/dev/ptmx`, `ioctl` (`TIOCSPTLCK`, `TIOCGPTPEER`), `fcntl` | a terminal | allowed |
//! | `statx`/`newfstatat`, `pipe2`, `clone` with `SIGCHLD` and no `CLONE_NEW*` flag (glibc's `fork`) | a spawn | allowed |
//! | `mmap`, `munmap`, `mprotect`, `brk`, `exit_group` | the allocator, the end | allowed |
//! | in the child: `rt_sigprocmask`, `rt_sigaction`, `setsid`, `ioctl(TIOCSCTTY)`, `dup2`, `open`/`openat` of `/dev/null`, `close_range`, `setgroups`, `setresgid`, `setresuid`, `chdir`, `prctl(PR_SET_DUMPABLE)`, the write of `/proc/self/oom_score_adj`, `execve` | `child` | allowed |
//!
//! What the filter refuses and PID 1 needs happens before it: `/proc`'s
//! `mount` (`crate::rootfs::mount_proc`), and everything of the outer
//! stage (`unshare`, `pivot_root`, the mounts), which is never under it.
//! PID 1 never calls `reboot`: its end is `kill(-1)` and an exit.

use std::io;

/// The signals PID 1 keeps ignoring, which every child sets back to the
/// default before `execve`: `SIGPIPE` (the Rust runtime ignores it, so a
/// write to a closed control connection is an `EPIPE`, not a death).
pub const IGNORED_BY_PID1: &[i32] = &[libc::SIGPIPE];

/// A step of [`apply`] that failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct Failed {
    /// What PID 1 was doing.
    pub step: &'static str,
    /// Why it failed.
    #[source]
    pub source: io::Error,
}

/// Puts the inherited state on the calling process (PID 1): the signal
/// dispositions, the bounding set, then `no_new_privs` and `seccomp`, the
/// filter (none when empty) last.
pub fn apply(seccomp: &[u8]) -> Result<(), Failed> {
    let failed = |step| move |source| Failed { step, source };
    super::sys::default_ignored_signals(IGNORED_BY_PID1)
        .map_err(failed("setting ignored signals to their default"))?;
    // What else a process hands down through `fork` and `execve`, set to
    // the defaults whatever the creator ran under: the execution domain
    // (`setarch -R` turns address-space randomization off, which the
    // filter refuses a workload to ask for) and the file mode mask. The
    // nice value and scheduling policy stay the creator's: `nice corral
    // run` is an operator's choice, and the cgroup bounds the CPU anyway.
    super::sys::default_personality().map_err(failed("setting the default personality"))?;
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    super::capabilities::drop_bounding_set()
        .map_err(failed("dropping capabilities from the bounding set"))?;
    if !seccomp.is_empty() {
        super::filter::install(seccomp).map_err(failed("installing the seccomp filter"))?;
    }
    Ok(())
}
