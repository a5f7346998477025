//! The few raw calls the init makes that rustix does not offer: `fork`,
//! the signal mask, `signalfd`, bringing up loopback, and `close_range`.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

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

/// In a freshly forked child: an empty signal mask and default
/// dispositions for the signals the Rust runtime or the init changed.
pub fn reset_signals_in_child() {
    // SAFETY: an all-zero sigset_t is valid input for sigemptyset.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `empty` is a valid, writable sigset_t; null old-set is allowed;
    // SIG_DFL is a valid disposition for SIGPIPE and SIGCHLD.
    unsafe {
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
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
    // SAFETY: `null` is open; `fd` is a standard descriptor of this process,
    // replaced atomically (dup2 leaves the copy without close-on-exec,
    // as a standard descriptor should be).
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) } < 0 {
        return Err(io::Error::last_os_error());
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
    use std::os::fd::{AsRawFd, IntoRawFd};
    // SAFETY: dup2 takes two descriptor numbers; `fd` is open (owned here)
    // and 0 is replaced atomically.
    if unsafe { libc::dup2(fd.as_raw_fd(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
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
