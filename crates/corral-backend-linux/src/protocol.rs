//! The host ↔ `corral-init` protocol, shared by both sides.
//!
//! Framing: a 4-byte big-endian length, then that many bytes of JSON. File
//! descriptors (the stdio of a spawned process) travel as `SCM_RIGHTS`
//! ancillary data attached to the first byte of the frame that announces
//! them. Every connection to the control socket carries at most one spawned
//! process: closing the connection kills that process's group.
//!
//! Startup (over the startup socketpair, before the control socket is
//! served): the host sends [`Prepare`] at once, and with a user namespace
//! asked for the init answers [`Startup::Unshared`] once it made it (the
//! host then writes its id maps); the host sends [`Go`] — the whole configuration, never on the
//! command line, where `/proc/1/cmdline` would show host paths inside the
//! sandbox, with the listening control socket attached — once the init is
//! in the sandbox's cgroup (an init may wait for it in a pool, made ahead
//! of demand); the init answers [`Startup::Ready`] or [`Startup::Failed`].
//! Once the sandbox's record is written the host sends [`Commit`]: until
//! then the init tears the sandbox down by itself when the startup socket
//! closes (its creator died), so a crash at any point of a create leaves
//! no process behind.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use serde::{Deserialize, Serialize};

/// Set (to anything) in the environment of an init that keeps the
/// descriptors it inherits and passes them on to exec children: only the
/// bench's `linux without fd-hygiene` row starts one so.
pub const KEEP_INHERITED_ENV: &str = "CORRAL_INIT_KEEP_INHERITED";

/// Largest frame accepted (argv and env are bounded well below this).
pub const MAX_FRAME: usize = 64 << 20;

/// Most descriptors one frame may carry.
pub const MAX_FDS: usize = 3;

/// How `corral-init` builds the sandbox (part of [`Go`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitConfig {
    /// Host path of the directory that becomes the sandbox's `/`.
    pub root: String,
    /// The sandbox's hostname (its id).
    pub hostname: String,
    /// Host directories the init binds read-only into the root; empty when
    /// the host bound them already (the `host` image, `create::bind_image`).
    pub host_dirs: Vec<HostDir>,
    /// The sandbox's remaining lifetime: PID 1 kills everything and exits
    /// when it ends.
    #[serde(default)]
    pub lifetime_ms: Option<u64>,
    /// Whether the sandbox ends when its creator does: the outer init keeps
    /// watching the startup socket after the commit ([`crate::init`]).
    #[serde(default)]
    pub bound_to_creator: bool,
    /// Rootless: the writable layer the init mounts and builds itself,
    /// inside its own mount namespace (`crate::userns::rootless`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootless: Option<RootlessLayer>,
}

/// The writable layer of a rootless sandbox, made by its init.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootlessLayer {
    /// The tmpfs's size: the disk limit.
    pub disk_bytes: u64,
    /// Whether `/etc` is the curated one (else the host's, bound).
    pub curated_etc: bool,
}

/// One top-level directory of the `host` image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDir {
    /// Absolute host path, e.g. `/usr`.
    pub path: String,
    /// When the host path is a symlink, its target: recreated as a symlink.
    pub symlink: Option<String>,
}

/// The host's first startup message, sent as soon as the init is started
/// (it may then wait in the pool): which namespaces to make ahead of the
/// go-ahead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prepare {
    /// Make a user namespace first, owning every other one, as this host
    /// id (uid and gid: the first of the sandbox's range); the init then
    /// answers [`Startup::Unshared`] and the host writes its id maps. The
    /// frame then carries the locked claim of the range, which the outer
    /// init keeps open for the sandbox's life.
    pub user_namespace: Option<u32>,
    /// Rootless: make a user namespace first as the caller (there is no
    /// host root to drop); the init answers [`Startup::Unshared`] and the
    /// host, the same user, writes its maps (`crate::userns::rootless`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rootless: bool,
}

/// The host's go-ahead, sent once the init is in the sandbox's cgroup. The
/// frame carries the listening control socket and, with a user namespace,
/// the sandbox's root directory (which the init, no longer privileged on
/// the host, could not reach through the state directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Go {
    /// How to build the sandbox.
    pub config: InitConfig,
    /// The compiled seccomp program PID 1 installs on itself before its
    /// first spawn, so every process of the sandbox inherits it; empty =
    /// none.
    pub seccomp: Vec<u8>,
}

/// The host's last startup message: the sandbox's record exists, so the
/// sandbox now outlives its creator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {}

/// The init's answer to [`Go`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Startup {
    /// The init made its user namespace (after [`Prepare`] asked for one):
    /// the host may write its id maps.
    Unshared {},
    /// PID 1 serves the control socket; `pid` is its pid on the host.
    Ready {
        /// Host pid of the sandbox's PID 1.
        pid: u32,
    },
    /// Setup failed at `step`.
    Failed {
        /// What was being done.
        step: String,
        /// The OS error, one line.
        error: String,
    },
}

/// A request from the host on a control connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Start a process in its own session and process group. The frame
    /// carries the fds `[stdin?, stdout, stderr]` (stdin only when `stdin`).
    Spawn {
        /// Program and arguments; `argv[0]` is looked up on `PATH` of `env`.
        argv: Vec<String>,
        /// The complete environment, `KEY=value`.
        env: Vec<String>,
        /// Working directory inside the sandbox.
        cwd: String,
        /// Whether a stdin fd is attached (else stdin is `/dev/null`).
        stdin: bool,
        /// Run on a new terminal of the sandbox's own `devpts` instead: the
        /// frame carries no fds, and the `Spawned` reply carries the
        /// terminal's master side.
        #[serde(default)]
        tty: bool,
        /// Whom the process runs as; absent from older frames (root).
        #[serde(default)]
        user: SpawnUser,
    },
    /// Send `signal` to the spawned process (or its whole group).
    Signal {
        /// Signal number.
        signal: i32,
        /// Whether to signal the whole process group.
        group: bool,
    },
    /// Kill every process of the sandbox and exit.
    Shutdown,
}

/// Whom a spawned process runs as, inside the sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnUser {
    /// Root of the sandbox, with the sandbox's kept capabilities.
    #[default]
    Root,
    /// The unprivileged user ([`crate::sandbox_user::USER_UID`],
    /// [`crate::sandbox_user::USER_GID`]), with no capabilities.
    User,
}

impl From<Option<corral_backend::RunAs>> for SpawnUser {
    fn from(run_as: Option<corral_backend::RunAs>) -> Self {
        match run_as {
            None | Some(corral_backend::RunAs::Root) => SpawnUser::Root,
            Some(corral_backend::RunAs::User) => SpawnUser::User,
        }
    }
}

impl SpawnUser {
    /// The working directory when none is asked for: the workspace for
    /// root (as always), the user's home for the user.
    pub fn default_cwd(self) -> &'static str {
        match self {
            SpawnUser::Root => corral_backend::WORKSPACE_DIR,
            SpawnUser::User => crate::sandbox_user::USER_HOME,
        }
    }
}

/// Why a spawn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpawnFailure {
    /// The program was not found on `PATH`.
    ProgramNotFound,
    /// The program exists but cannot be executed.
    NotExecutable,
    /// The working directory does not exist or is not a directory.
    CwdNotFound,
    /// The frame was malformed (wrong fd count, NUL bytes).
    BadRequest,
    /// Any other failure of fork, dup2, seccomp or execve.
    System,
}

/// A reply from the init on a control connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The process runs as `pid` (its pgid too), in the sandbox's pid namespace.
    Spawned {
        /// Pid inside the sandbox.
        pid: u32,
    },
    /// The spawn failed; nothing runs.
    SpawnFailed {
        /// The kind of failure.
        failure: SpawnFailure,
        /// The errno, where there was one.
        errno: i32,
    },
    /// The process exited and nothing of its process group is left.
    Exited {
        /// Exit code, when it exited.
        code: Option<i32>,
        /// Signal number, when a signal killed it.
        signal: Option<i32>,
    },
}

/// Encodes `msg` as one frame.
pub fn encode<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
    if body.len() > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("frame of {} bytes exceeds {MAX_FRAME}", body.len()),
        ));
    }
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Decodes one frame from the front of `buf`: `Ok(Some((msg, used)))` when a
/// whole frame is there, `Ok(None)` when more bytes are needed.
pub fn decode<T: for<'de> Deserialize<'de>>(buf: &[u8]) -> io::Result<Option<(T, usize)>> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds {MAX_FRAME}"),
        ));
    }
    let Some(body) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    let msg =
        serde_json::from_slice(body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(Some((msg, 4 + len)))
}

/// Writes one frame to a blocking stream.
pub fn write_frame<T: Serialize>(w: &mut impl Write, msg: &T) -> io::Result<()> {
    w.write_all(&encode(msg)?)
}

/// Reads one frame from a blocking stream; `Ok(None)` at a clean EOF.
pub fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> io::Result<Option<T>> {
    let mut head = [0u8; 4];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(head) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds {MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Sends one frame on socket `sock`, attaching `fds` to its first byte.
pub fn send_with_fds<T: Serialize>(
    sock: BorrowedFd<'_>,
    msg: &T,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let frame = encode(msg)?;
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut anc = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !anc.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors for one frame",
        ));
    }
    let first = sendmsg(
        sock,
        &[io::IoSlice::new(&frame)],
        &mut anc,
        SendFlags::NOSIGNAL,
    )?;
    let mut rest = &frame[first..];
    while !rest.is_empty() {
        let n = rustix::net::send(sock, rest, SendFlags::NOSIGNAL)?;
        rest = &rest[n..];
    }
    Ok(())
}

/// Receives bytes from `sock` into `buf` (appending), collecting any
/// descriptors into `fds`. Returns the number of bytes read (0 = EOF).
pub fn recv_with_fds(
    sock: BorrowedFd<'_>,
    buf: &mut Vec<u8>,
    fds: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut chunk = vec![0u8; 64 * 1024];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let msg = recvmsg(
        sock,
        &mut [io::IoSliceMut::new(&mut chunk)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    for m in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    buf.extend_from_slice(&chunk[..msg.bytes]);
    Ok(msg.bytes)
}

/// Reads one frame from a blocking socket, with the descriptors attached
/// to it; reads exactly the frame's bytes, never beyond. `Ok(None)` at EOF.
pub fn recv_frame_with_fds<T: for<'de> Deserialize<'de>>(
    sock: &mut std::os::unix::net::UnixStream,
) -> io::Result<Option<(T, Vec<OwnedFd>)>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut head = [0u8; 4];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        sock.as_fd(),
        &mut [io::IoSliceMut::new(&mut head)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )?
    .bytes;
    let mut fds = Vec::new();
    for m in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    if got == 0 {
        return Ok(None);
    }
    sock.read_exact(&mut head[got..])?;
    let len = u32::from_be_bytes(head) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds {MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    sock.read_exact(&mut body)?;
    let msg =
        serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(Some((msg, fds)))
}

/// Borrows a list of owned fds.
pub fn borrow_all(fds: &[OwnedFd]) -> Vec<BorrowedFd<'_>> {
    fds.iter().map(AsFd::as_fd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_split() {
        let req = Request::Spawn {
            argv: vec!["sh".into(), "-c".into(), "echo hi".into()],
            env: vec!["PATH=/bin".into()],
            cwd: "/workspace".into(),
            stdin: false,
            tty: false,
            user: SpawnUser::User,
        };
        let mut bytes = encode(&req).unwrap();
        bytes.extend(encode(&Request::Shutdown).unwrap());
        assert!(decode::<Request>(&bytes[..3]).unwrap().is_none());
        assert!(decode::<Request>(&bytes[..10]).unwrap().is_none());
        let (first, used) = decode::<Request>(&bytes).unwrap().unwrap();
        assert_eq!(first, req);
        let (second, used2) = decode::<Request>(&bytes[used..]).unwrap().unwrap();
        assert_eq!(second, Request::Shutdown);
        assert_eq!(used + used2, bytes.len());
        let mut r = &bytes[..];
        assert_eq!(read_frame::<Request>(&mut r).unwrap(), Some(req));
        assert_eq!(
            read_frame::<Request>(&mut r).unwrap(),
            Some(Request::Shutdown)
        );
        assert_eq!(read_frame::<Request>(&mut r).unwrap(), None);
    }

    #[test]
    fn an_older_spawn_frame_runs_as_root() {
        let older = r#"{"spawn":{"argv":["id"],"env":[],"cwd":"/","stdin":false}}"#;
        let req: Request = serde_json::from_str(older).unwrap();
        assert!(
            matches!(
                req,
                Request::Spawn {
                    user: SpawnUser::Root,
                    tty: false,
                    ..
                }
            ),
            "{req:?}"
        );
        let rows = [
            (None, SpawnUser::Root),
            (Some(corral_backend::RunAs::Root), SpawnUser::Root),
            (Some(corral_backend::RunAs::User), SpawnUser::User),
        ];
        for (run_as, want) in rows {
            assert_eq!(SpawnUser::from(run_as), want, "{run_as:?}");
        }
    }

    #[test]
    fn oversized_and_garbage_frames_are_refused() {
        let mut big = (u32::MAX).to_be_bytes().to_vec();
        big.extend_from_slice(b"{}");
        assert!(decode::<Reply>(&big).is_err());
        let mut bad = 3u32.to_be_bytes().to_vec();
        bad.extend_from_slice(b"xyz");
        assert!(decode::<Reply>(&bad).is_err());
    }

    #[test]
    fn fds_travel_with_the_frame() {
        let (a, b) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let (r, w) = rustix::pipe::pipe().unwrap();
        let reply = Reply::Exited {
            code: Some(3),
            signal: None,
        };
        send_with_fds(a.as_fd(), &reply, &[w.as_fd()]).unwrap();
        drop(w);
        let mut buf = Vec::new();
        let mut fds = Vec::new();
        while decode::<Reply>(&buf).unwrap().is_none() {
            assert!(recv_with_fds(b.as_fd(), &mut buf, &mut fds).unwrap() > 0);
        }
        assert_eq!(decode::<Reply>(&buf).unwrap().unwrap().0, reply);
        assert_eq!(fds.len(), 1);
        rustix::io::write(&fds[0], b"x").unwrap();
        drop(fds);
        let mut got = [0u8; 2];
        assert_eq!(rustix::io::read(&r, &mut got).unwrap(), 1);
        assert_eq!(&got[..1], b"x");
    }
}
