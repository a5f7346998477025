//! The raw calls the init makes that rustix does not offer safely:
//! `fork`, `_exit`, `execve`, the signal mask and dispositions, `signalfd`, `unshare`,
//! bringing up loopback, installing the seccomp filter, `kill(-1)` and
//! `close_range`. Every `unsafe` block of the code corral-init runs lives
//! here, each behind a small safe function whose contract makes it sound;
//! the host side's are in the crate's own `sys` module.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use rustix::thread::UnshareFlags;

/// The side of a fork this process is on.
pub enum Forked {
    /// The parent, with the child's pid.
    Parent(i32),
    /// The child.
    Child,
}

/// `fork()`. Only called by corral-init, which is single-threaded, so the
/// child may allocate and run arbitrary code before `execve`.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: corral-init never starts a thread, so no lock can be held by
    // another thread at the fork; both sides continue with valid state.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        p => Ok(Forked::Parent(p)),
    }
}

fn sigchld_set() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid value to initialise with
    // sigemptyset, which is called right after.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
    }
    set
}

/// Blocks `SIGCHLD` and returns a close-on-exec, non-blocking signalfd
/// that becomes readable when a child changes state.
pub fn sigchld_fd() -> io::Result<OwnedFd> {
    let set = sigchld_set();
    // SAFETY: `set` is a valid sigset_t; a null old-set pointer is allowed.
    if unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: -1 asks for a new fd; `set` is valid for the call.
    let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by signalfd and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Drains a non-blocking signalfd.
pub fn drain_signalfd(fd: &OwnedFd) {
    let mut buf = [0u8; 128 * 8];
    while let Ok(n) = rustix::io::read(fd, &mut buf) {
        if n == 0 {
            break;
        }
    }
}

/// The kernel's `struct sigaction`, as `rt_sigaction` reads and writes it
/// on x86_64 and aarch64 (both have `sa_restorer`; glibc's struct differs).
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: usize,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// The highest signal number the kernel knows (`_NSIG` on x86_64 and aarch64).
const LAST_SIGNAL: i32 = 64;

/// `rt_sigaction(signal, new, old)`: `new` as the disposition when given,
/// the previous one written to `old` when given.
fn rt_sigaction(
    signal: i32,
    new: Option<&KernelSigaction>,
    old: Option<&mut KernelSigaction>,
) -> io::Result<()> {
    let new = new.map_or(std::ptr::null(), std::ptr::from_ref);
    let old = old.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: `new` is null or points at a live KernelSigaction, `old` null
    // or at a writable one, each the layout the kernel reads and writes on
    // the supported architectures; the size is that of the kernel's
    // 64-bit signal set. The kernel keeps no reference to either.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            new,
            old,
            std::mem::size_of::<u64>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets every signal this process ignores back to its default action, but
/// those in `keep`; returns how many it changed. `SIG_IGN` is the one
/// disposition `execve` keeps, so whatever the creator of the sandbox
/// ignored (a shell's `nohup` or background job: `SIGHUP`, `SIGINT`) or
/// glibc's `posix_spawn` left ignored (its internal signals 32 and 33)
/// would otherwise reach every workload. The raw system call, because
/// glibc refuses to touch its internal signals.
pub fn default_ignored_signals(keep: &[i32]) -> io::Result<usize> {
    let default = KernelSigaction::default();
    let mut changed = 0;
    for signal in 1..=LAST_SIGNAL {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP || keep.contains(&signal) {
            continue;
        }
        let mut now = KernelSigaction::default();
        rt_sigaction(signal, None, Some(&mut now))?;
        if now.handler == libc::SIG_IGN {
            rt_sigaction(signal, Some(&default), None)?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// In a child PID 1 just forked: an empty signal mask (PID 1 blocks
/// `SIGCHLD` for its signalfd, and the mask survives `execve`) and the
/// default action for each signal of `ignored`, the ones PID 1 ignores
/// (an ignored signal stays ignored across `execve`; a caught one is reset
/// by `execve` itself, and PID 1 ignores no other, see
/// [`default_ignored_signals`]).
pub fn reset_signals_in_child(ignored: &[i32]) {
    // SAFETY: an all-zero sigset_t is valid input for sigemptyset.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a valid, writable sigset_t; null old-set is allowed.
    unsafe {
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
    for &signal in ignored {
        // SAFETY: SIG_DFL is a valid disposition for any signal the caller
        // names; an invalid number only fails with EINVAL.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

/// Sets the `IFF_UP` flag of `lo` in the current network namespace.
pub fn loopback_up() -> io::Result<()> {
    let sock = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )?;
    // SAFETY: an all-zero ifreq is a valid value; the name is set below.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    use std::os::fd::AsRawFd;
    // SAFETY: `sock` is an open socket and `req` a valid ifreq for SIOCGIFFLAGS.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: as above, for SIOCSIFFLAGS.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Takes the startup socket the host hands over on descriptor `fd` (a
/// standard one): moves it to a new close-on-exec descriptor and puts
/// `/dev/null` in its place. Fails when `fd` is not a socket.
pub fn take_startup_socket(fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: the host passed this descriptor to us and nothing else in this
    // process owns it; `from_raw_fd` is only reached when it is open.
    let borrowed = unsafe {
        // F_GETFD tells whether the number is open at all.
        if libc::fcntl(fd, libc::F_GETFD) < 0 {
            return Err(io::Error::last_os_error());
        }
        std::os::fd::BorrowedFd::borrow_raw(fd)
    };
    let kind = rustix::fs::fstat(borrowed)?.st_mode & libc::S_IFMT;
    if kind != libc::S_IFSOCK {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a socket"));
    }
    let moved = rustix::io::fcntl_dupfd_cloexec(borrowed, 3)?;
    let null = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    // `fd` is replaced atomically (dup2 leaves the copy without
    // close-on-exec, as a standard descriptor should be).
    match fd {
        0 => rustix::stdio::dup2_stdin(&null)?,
        1 => rustix::stdio::dup2_stdout(&null)?,
        2 => rustix::stdio::dup2_stderr(&null)?,
        _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
    }
    Ok(moved)
}

/// What [`above_stderr`] does to each descriptor above 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    /// Closes it now.
    Close,
    /// Marks it close-on-exec: it stays open until a successful `execve`.
    CloseOnExec,
}

/// Closes (or marks close-on-exec) every descriptor above stderr:
/// `close_range(3, ~0)`, or on a kernel without it (before 5.11) each
/// descriptor `/proc/self/fd` lists. Allocates only on that fallback; the
/// callers are single-threaded.
pub fn above_stderr(sweep: Sweep) -> io::Result<()> {
    let flags = match sweep {
        Sweep::Close => 0,
        Sweep::CloseOnExec => libc::CLOSE_RANGE_CLOEXEC,
    };
    // SAFETY: close_range takes two descriptor numbers and flags, no
    // pointers. Every descriptor above stderr is either inherited and owned
    // by nothing in this process (first thing in the init) or, in a child
    // about to exec, marked close-on-exec only, so no live OwnedFd is closed
    // under its owner by `Sweep::CloseOnExec`; `Sweep::Close` runs before
    // the init has opened anything of its own.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, flags) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) {
        return Err(err);
    }
    let listed: Vec<i32> = std::fs::read_dir("/proc/self/fd")?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in listed {
        // SAFETY: as above; `fd` is a number the kernel listed (the
        // directory's own descriptor, closed by now, fails harmlessly).
        unsafe {
            match sweep {
                Sweep::Close => libc::close(fd),
                Sweep::CloseOnExec => libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC),
            };
        }
    }
    Ok(())
}

/// Keeps only `fd` of this process's descriptors above stderr: it is moved
/// to stdin (replacing whatever stdin was) and everything above stderr is
/// closed. Returns the descriptor now at 0.
pub fn keep_only(fd: OwnedFd) -> io::Result<OwnedFd> {
    use std::os::fd::IntoRawFd;
    // Descriptor 0 is replaced atomically.
    rustix::stdio::dup2_stdin(&fd)?;
    // The original is closed below with the rest; it must not be closed
    // again when `fd` would drop.
    let _ = fd.into_raw_fd();
    above_stderr(Sweep::Close)?;
    // SAFETY: descriptor 0 is open (the dup2 above) and owned by nothing
    // else in this process from now on.
    Ok(unsafe { OwnedFd::from_raw_fd(0) })
}

/// Closes every descriptor above stderr but `keep` (a child's error pipe),
/// with `close_range` on each side of it. Fails on a kernel without
/// `close_range` (before 5.11), leaving every descriptor open.
pub fn close_all_but(keep: i32) -> io::Result<()> {
    let keep = u32::try_from(keep).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let ranges = [
        (3, keep.checked_sub(1)),
        (keep.saturating_add(1), Some(u32::MAX)),
    ];
    for (first, last) in ranges {
        let Some(last) = last.filter(|last| first <= *last && keep >= 3) else {
            continue;
        };
        // SAFETY: close_range takes two descriptor numbers and flags, no
        // pointers; it runs in a forked child about to exec, whose only
        // descriptors still in use are stdio and `keep`, both left open.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Ends this process at once with `code`, without running exit handlers or
/// destructors: how a forked child that could not exec leaves.
pub fn exit_immediately(code: i32) -> ! {
    // SAFETY: `_exit` takes an integer and never returns; skipping the
    // exit handlers and destructors is its purpose and is always sound.
    unsafe { libc::_exit(code) }
}

/// Replaces this process's program with `program`, run with `argv` and
/// the environment `envp`. Returns only on failure, with the error.
pub fn execve(program: &CStr, argv: &[CString], envp: &[CString]) -> io::Error {
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut envp_p: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_p.push(std::ptr::null());
    // SAFETY: `program` is NUL-terminated; `argv_p` and `envp_p` are
    // null-terminated arrays of pointers into CStrings borrowed for the
    // whole call.
    unsafe { libc::execve(program.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
    io::Error::last_os_error()
}

/// `unshare(flags)`: moves the calling thread into new namespaces of the
/// kinds in `flags`. Refuses `UnshareFlags::FILES` (`EINVAL`): the init
/// never splits its descriptor table.
pub fn unshare_namespaces(flags: UnshareFlags) -> io::Result<()> {
    if flags.contains(UnshareFlags::FILES) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: `unshare_unsafe` is unsafe only for `UnshareFlags::FILES`,
    // after which another thread could be handed descriptors of a table it
    // no longer shares; that flag is refused above (and corral-init is
    // single-threaded, so no other thread's view changes anyway).
    unsafe { rustix::thread::unshare_unsafe(flags) }?;
    Ok(())
}

/// `seccomp(SECCOMP_SET_MODE_FILTER)`: installs `program`, a classic BPF
/// program of 8-byte instructions, on the calling thread. `EINVAL` when it
/// is not a whole number of instructions or has more than `u16::MAX` of
/// them (the kernel itself refuses more than 4096). The caller sets
/// `PR_SET_NO_NEW_PRIVS` first, or the kernel refuses with `EACCES`.
pub fn set_seccomp_filter(program: &[u8]) -> io::Result<()> {
    const INSN: usize = 8;
    let len = program.len() / INSN;
    let len =
        libc::c_ushort::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    if !program.len().is_multiple_of(INSN) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let fprog = libc::sock_fprog {
        len,
        // The kernel only reads through this pointer (copy_from_user, which
        // has no alignment requirement).
        filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: `fprog` points at `program`, which is borrowed for the call
    // and holds exactly `len` 8-byte instructions (checked above); the
    // kernel copies the program and keeps no reference to our memory.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_ulong,
            &raw const fprog,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `kill(-1, SIGKILL)`: from PID 1, kills every other process of its pid
/// namespace.
pub fn kill_every_other_process() {
    // SAFETY: kill takes two integers and no pointers; signalling every
    // process this one may signal has no memory effect on this process.
    unsafe {
        libc::kill(-1, libc::SIGKILL);
    }
}

/// `personality(PER_LINUX)`: the default execution domain, without
/// `ADDR_NO_RANDOMIZE`, `READ_IMPLIES_EXEC` or any other flag a creator
/// may have run under (they survive `fork` and `execve`).
pub fn default_personality() -> io::Result<()> {
    // SAFETY: `personality` takes a plain integer and touches no memory of
    // this process; PER_LINUX (0) is always a valid domain.
    let previous = unsafe { libc::personality(0) };
    match previous {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw `rt_sigaction` reads the same handler as glibc's
    /// `sigaction` for every signal glibc lets a program see: the struct
    /// layout is the kernel's. Reads only, so the test process is unchanged.
    #[test]
    fn the_raw_disposition_is_the_one_glibc_reads() {
        let glibc_internal = [32, 33];
        for signal in (1..=LAST_SIGNAL).filter(|s| !glibc_internal.contains(s)) {
            let mut raw = KernelSigaction::default();
            rt_sigaction(signal, None, Some(&mut raw)).expect("rt_sigaction");
            // SAFETY: an all-zero sigaction is a valid value to be overwritten.
            let mut libc_view: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a null new action only reads; `libc_view` is writable.
            let rc = unsafe { libc::sigaction(signal, std::ptr::null(), &mut libc_view) };
            assert_eq!(rc, 0, "sigaction({signal})");
            assert_eq!(raw.handler, libc_view.sa_sigaction, "signal {signal}");
        }
        // Not all zeros: the Rust runtime ignores SIGPIPE.
        let mut pipe = KernelSigaction::default();
        rt_sigaction(libc::SIGPIPE, None, Some(&mut pipe)).expect("rt_sigaction");
        assert_eq!(pipe.handler, libc::SIG_IGN);
    }
}
