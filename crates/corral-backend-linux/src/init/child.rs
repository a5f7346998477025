//! Starting one requested process: resolve the program, fork, and in the
//! child set up what depends on the request (the session, stdio, user,
//! working directory, OOM score), then `execve`. What is the same for
//! every process (the seccomp filter, `no_new_privs`, the capability
//! bounding set, the signal dispositions) the child inherits from PID 1,
//! which put it on itself once (`super::inherited`). Failures before
//! `execve` come back through a close-on-exec pipe, so a spawn either runs
//! the program or reports why not.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

use super::inherited::IGNORED_BY_PID1;
use super::sys::{Forked, execve, exit_immediately, fork, reset_signals_in_child};
use crate::protocol::{SpawnFailure, SpawnUser};

/// `PATH` used to resolve a program when the environment sets none.
const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A spawn request, decoded.
pub struct SpawnSpec<'a> {
    /// Program and arguments.
    pub argv: &'a [String],
    /// `KEY=value` pairs.
    pub env: &'a [String],
    /// Working directory.
    pub cwd: &'a str,
    /// `[stdin?, stdout, stderr]`.
    pub fds: Vec<OwnedFd>,
    /// Whether `fds` starts with stdin.
    pub stdin: bool,
    /// The terminal's slave side, for a process on a terminal (`fds` empty).
    pub tty: Option<OwnedFd>,
    /// Whom the process runs as.
    pub user: SpawnUser,
}

/// A failed spawn: why, and the errno (0 when none).
pub type Failure = (SpawnFailure, i32);

/// Starts `spec`; returns the child's pid (also its pgid and sid).
pub fn spawn(spec: SpawnSpec<'_>) -> Result<i32, Failure> {
    let want = match (&spec.tty, spec.stdin) {
        (Some(_), _) => 0,
        (None, true) => 3,
        (None, false) => 2,
    };
    if spec.fds.len() != want || spec.argv.is_empty() {
        return Err((SpawnFailure::BadRequest, 0));
    }
    let argv = cstrings(spec.argv)?;
    let envp = cstrings(spec.env)?;
    let program = resolve(&spec.argv[0], spec.env)?;
    let program =
        CString::new(program.as_os_str().as_bytes()).map_err(|_| (SpawnFailure::BadRequest, 0))?;
    let cwd = CString::new(spec.cwd).map_err(|_| (SpawnFailure::BadRequest, 0))?;
    let (err_r, err_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| (SpawnFailure::System, e.raw_os_error()))?;
    match fork().map_err(|e| (SpawnFailure::System, e.raw_os_error().unwrap_or(0)))? {
        Forked::Child => {
            drop(err_r);
            let error_pipe = err_w.as_raw_fd();
            let (kind, errno) = child(&spec, &program, &argv, &envp, &cwd, error_pipe);
            let mut msg = [0u8; 8];
            msg[..4].copy_from_slice(&(kind as i32).to_be_bytes());
            msg[4..].copy_from_slice(&errno.to_be_bytes());
            let _ = rustix::io::write(&err_w, &msg);
            // Ends the forked child without running the parent's atexit
            // handlers or destructors.
            exit_immediately(127)
        }
        Forked::Parent(pid) => {
            drop(err_w);
            drop(spec.fds);
            drop(spec.tty);
            let mut msg = [0u8; 8];
            let mut got = 0;
            while got < msg.len() {
                match rustix::io::read(&err_r, &mut msg[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(Errno::INTR) => continue,
                    Err(_) => break,
                }
            }
            if got == 0 {
                return Ok(pid);
            }
            // The child failed before execve: reap it here.
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty());
            }
            let kind = i32::from_be_bytes([msg[0], msg[1], msg[2], msg[3]]);
            let errno = i32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]);
            Err((failure_of(kind), errno))
        }
    }
}

const KINDS: [SpawnFailure; 5] = [
    SpawnFailure::ProgramNotFound,
    SpawnFailure::NotExecutable,
    SpawnFailure::CwdNotFound,
    SpawnFailure::BadRequest,
    SpawnFailure::System,
];

fn failure_of(kind: i32) -> SpawnFailure {
    KINDS
        .iter()
        .copied()
        .find(|k| *k as i32 == kind)
        .unwrap_or(SpawnFailure::System)
}

/// The child side: returns only on failure.
fn child(
    spec: &SpawnSpec<'_>,
    program: &CString,
    argv: &[CString],
    envp: &[CString],
    cwd: &CString,
    error_pipe: i32,
) -> Failure {
    let sys = |e: Errno| (SpawnFailure::System, e.raw_os_error());
    reset_signals_in_child(IGNORED_BY_PID1);
    if let Err(e) = rustix::process::setsid() {
        return sys(e);
    }
    if let Some(tty) = &spec.tty {
        if let Err(e) = rustix::process::ioctl_tiocsctty(tty) {
            return sys(e);
        }
        for dup2 in [
            rustix::stdio::dup2_stdin::<&OwnedFd>,
            rustix::stdio::dup2_stdout,
            rustix::stdio::dup2_stderr,
        ] {
            if let Err(e) = dup2(tty) {
                return sys(e);
            }
        }
        return exec_prepared(program, argv, envp, cwd, error_pipe, spec.user);
    }
    let (stdin, rest) = if spec.stdin {
        (None, &spec.fds[1..])
    } else {
        match rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            Ok(null) => (Some(null), &spec.fds[..]),
            Err(e) => return sys(e),
        }
    };
    let stdin_fd = match &stdin {
        Some(n) => n.as_fd(),
        None => spec.fds[0].as_fd(),
    };
    for (fd, dup2) in [
        (
            stdin_fd,
            rustix::stdio::dup2_stdin::<BorrowedFd<'_>> as fn(_) -> _,
        ),
        (rest[0].as_fd(), rustix::stdio::dup2_stdout),
        (rest[1].as_fd(), rustix::stdio::dup2_stderr),
    ] {
        // The targets are the standard descriptors of this forked child.
        if let Err(e) = dup2(fd) {
            return sys(e);
        }
    }
    // `/dev/null` is stdin now; its first descriptor is closed here, while
    // it is still owned. Past this point `exec_prepared` closes every
    // descriptor above stderr behind its owner's back, so no owned
    // descriptor of this frame may be left to drop when `execve` fails.
    drop(stdin);
    exec_prepared(program, argv, envp, cwd, error_pipe, spec.user)
}

/// The common tail of the child: descriptors, identity, working
/// directory, the OOM score, `execve`. Every descriptor above stderr is
/// marked close-on-exec (the error pipe must stay open until `execve`), so
/// the program starts with exactly stdin, stdout and stderr, whatever PID 1
/// holds. Returns only on failure.
///
/// The raise of the OOM score comes last, once this child is no more than
/// the workload it is about to become: its bounding set and filter those
/// of PID 1 (inherited), its user switched, and every descriptor but stdio
/// and the `error_pipe` closed — in a user namespace it is made dumpable
/// for one `open`, and a neighbour of the same ids could attach to it in
/// that moment; it must find nothing of PID 1's there.
fn exec_prepared(
    program: &CString,
    argv: &[CString],
    envp: &[CString],
    cwd: &CString,
    error_pipe: i32,
    user: SpawnUser,
) -> Failure {
    if super::hygiene()
        && let Err(e) = super::sys::above_stderr(super::sys::Sweep::CloseOnExec)
    {
        return (SpawnFailure::System, e.raw_os_error().unwrap_or(0));
    }
    if user == SpawnUser::User
        && let Err(e) = become_user()
    {
        return (SpawnFailure::System, e.raw_os_error());
    }
    // After the switch, so the user may only enter what it may enter.
    if let Err(e) = rustix::process::chdir(cwd.as_c_str()) {
        return (SpawnFailure::CwdNotFound, e.raw_os_error());
    }
    // Without descriptor hygiene (measuring only) nothing is closed, and
    // the score is not raised through a dumpable moment either.
    if super::hygiene() && super::sys::close_all_but(error_pipe).is_ok() {
        super::limits::expose_to_oom_killer();
    }
    let errno = execve(program, argv, envp).raw_os_error().unwrap_or(0);
    let kind = match errno {
        libc::ENOENT => SpawnFailure::ProgramNotFound,
        libc::EACCES | libc::ENOEXEC | libc::EPERM => SpawnFailure::NotExecutable,
        _ => SpawnFailure::System,
    };
    (kind, errno)
}

/// Becomes the sandbox's unprivileged user: no supplementary groups, then
/// its gid and uid (real, effective and saved). Going from uid 0 to
/// another without `SECBIT_KEEP_CAPS` makes the kernel clear the permitted
/// and effective capabilities, so the program starts with none. These are
/// the raw per-thread calls, right for this single-threaded forked child.
fn become_user() -> Result<(), Errno> {
    use crate::sandbox_user::{USER_GID, USER_UID};
    use rustix::process::{Gid, Uid};
    match rustix::thread::set_thread_groups(&[]) {
        // Denied where the namespace's `setgroups` is `deny` (a rootless
        // single-id map): then there are no supplementary groups to shed.
        Ok(()) | Err(Errno::PERM) => {}
        Err(e) => return Err(e),
    }
    let gid = Gid::from_raw(USER_GID);
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    let uid = Uid::from_raw(USER_UID);
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    Ok(())
}

fn cstrings(items: &[String]) -> Result<Vec<CString>, Failure> {
    items
        .iter()
        .map(|s| CString::new(s.as_str()).map_err(|_| (SpawnFailure::BadRequest, 0)))
        .collect()
}

/// Resolves `argv0` like `execvp`: as a path when it holds a `/`, else on
/// the `PATH` of `env`.
fn resolve(argv0: &str, env: &[String]) -> Result<PathBuf, Failure> {
    if argv0.contains('/') {
        return Ok(PathBuf::from(argv0));
    }
    let path = env
        .iter()
        .find_map(|kv| kv.strip_prefix("PATH="))
        .unwrap_or(FALLBACK_PATH);
    let mut not_executable = None;
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let candidate = Path::new(dir).join(argv0);
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            return Ok(candidate);
        }
        not_executable.get_or_insert(candidate);
    }
    match not_executable {
        Some(_) => Err((SpawnFailure::NotExecutable, libc::EACCES)),
        None => Err((SpawnFailure::ProgramNotFound, libc::ENOENT)),
    }
}
