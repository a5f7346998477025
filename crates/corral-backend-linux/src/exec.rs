//! `exec`: one command to completion through PID 1's control socket.
//!
//! The host makes the pipes: stdout and stderr always, stdin only when bytes
//! are given (otherwise the command's stdin is `/dev/null` inside — closed).
//! One control connection carries the command: `Spawn` with the pipe ends
//! attached, then `Exited`, which PID 1 sends only when the leader is
//! reaped and nothing of its process group is left. The pipes' host ends
//! and the control connection are read on the runtime's reactor, polled
//! by the run itself ([`crate::exec_run`]): an exec starts no thread,
//! chunks reach the sink as they arrive, and nothing is read ahead of the
//! sink (a slow sink slows the command, an output flood never grows
//! memory). On timeout or abort the host asks PID 1 to `SIGKILL` the
//! group and waits for `Exited` before settling (the
//! phases of the one settle machine, [`corral_backend::settle`], driving
//! the run of [`crate::exec_run`]); if the call is dropped half-way, the
//! control connection closes and PID 1 kills the group itself.
//!
//! A request without a `timeout` runs under the backend's default
//! wall-clock limit ([`crate::exec_timeout::DEFAULT_EXEC_TIMEOUT`] unless changed), so a
//! careless caller never leaves a command running forever. A command during
//! whose run the sandbox cgroup's `oom_kill` counter rose is reported as
//! [`ExitStatus::OomKilled`], whichever of its processes the kernel killed:
//! a script that goes on after its child was killed, and exits 0 or 137,
//! was still cut short by the memory limit.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use corral_backend::settle::{Bounds, Ending, KillPolicy, Limits, settle};
use corral_backend::{
    BackendError, DEFAULT_PATH, Environment, ExecError, ExecOutcome, ExecRequest, ExitStatus,
    OutputSink, Result, SandboxError, TimeoutLimit, WORKSPACE_DIR, now_ms, signal,
};

use crate::control_reader::ControlReader;
use crate::exec_run::{Exit, LinuxRun, Sources, StdinFeed};
use crate::exec_timeout::DEFAULT_TIMEOUT_ENV;
use crate::pipes::{self, HostReader, HostWriter, OutputPipeSize};
use crate::protocol::{self, Reply, Request, SpawnFailure, SpawnUser};
use crate::state::{Meta, State};

/// How long output is still drained after the group is dead.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// How long PID 1 may take to confirm a killed group is gone.
const KILL_CONFIRM: Duration = Duration::from_secs(10);
/// How long PID 1 may take to answer a spawn.
const SPAWN_REPLY: Duration = Duration::from_secs(30);
/// What a failed blocking task of `exec` is called.
const EXEC_TASK: &str = "exec task";

/// The complete environment of a command run as `user`: defaults, then
/// the sandbox's, then the request's.
pub fn command_env(meta: &Meta, extra: &Environment, user: SpawnUser) -> Vec<String> {
    env_lines(command_env_map(meta, extra, user))
}

/// [`command_env`] before it is written as `KEY=value` lines. Root's
/// `HOME` is the workspace; the user's is its home, with `USER` and
/// `LOGNAME` naming it.
pub fn command_env_map(
    meta: &Meta,
    extra: &Environment,
    user: SpawnUser,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), DEFAULT_PATH.to_string());
    match user {
        SpawnUser::Root => {
            env.insert("HOME".to_string(), WORKSPACE_DIR.to_string());
        }
        SpawnUser::User => {
            env.insert(
                "HOME".to_string(),
                crate::sandbox_user::USER_HOME.to_string(),
            );
            env.insert("USER".to_string(), crate::etc::USER_NAME.to_string());
            env.insert("LOGNAME".to_string(), crate::etc::USER_NAME.to_string());
        }
    }
    env.insert("HOSTNAME".to_string(), meta.id.clone());
    env.extend(
        meta.env
            .iter()
            .chain(extra.iter())
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// An environment as the `KEY=value` lines a spawn request carries.
pub fn env_lines(env: BTreeMap<String, String>) -> Vec<String> {
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The pipes a spawned command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stdio {
    /// Whether stdin is a pipe (else it is `/dev/null` inside).
    pub stdin: bool,
    /// The size of the stdout and stderr pipes.
    pub output: OutputPipeSize,
}

/// A spawned command: its control connection and the host's ends of its
/// pipes.
pub struct Spawned {
    /// The control connection (one per command).
    pub control: UnixStream,
    /// The read end of stdout.
    pub stdout: HostReader,
    /// The read end of stderr.
    pub stderr: HostReader,
    /// The write end of stdin, when stdin was asked for.
    pub stdin: Option<HostWriter>,
    /// The pid inside the sandbox.
    pub pid: u32,
}

/// Connects to sandbox `id`'s PID 1 and spawns `argv` as `user` with the
/// pipes `stdio` asks for (blocking).
pub fn spawn(
    state: &State,
    id: &str,
    argv: Vec<String>,
    env: Vec<String>,
    cwd: String,
    user: SpawnUser,
    stdio: Stdio,
) -> Result<Spawned> {
    let pipe_err =
        |e: std::io::Error| BackendError::from_io(format_args!("sandbox {id}: pipe"), &e);
    let (out_r, out_w) = pipes::output(stdio.output).map_err(pipe_err)?;
    let (err_r, err_w) = pipes::output(stdio.output).map_err(pipe_err)?;
    let with_stdin = stdio.stdin;
    let (in_r, in_w) = if with_stdin {
        let (r, w) = pipes::input().map_err(pipe_err)?;
        (Some(r), Some(w))
    } else {
        (None, None)
    };
    let req = Request::Spawn {
        argv,
        env,
        cwd,
        stdin: with_stdin,
        tty: false,
        user,
    };
    let mut fds = Vec::new();
    if let Some(r) = &in_r {
        fds.push(r.as_fd());
    }
    fds.push(out_w.as_fd());
    fds.push(err_w.as_fd());
    let (control, pid, _) = request_spawn(state, id, &req, &fds)?;
    Ok(Spawned {
        control,
        stdout: out_r,
        stderr: err_r,
        stdin: in_w,
        pid,
    })
}

/// Sends one `Spawn` (with `fds`) on a new control connection and waits for
/// the answer: the connection, the pid, and the descriptors of the reply.
pub fn request_spawn(
    state: &State,
    id: &str,
    req: &Request,
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> Result<(UnixStream, u32, Vec<OwnedFd>)> {
    let io_err = |what: &str, e: std::io::Error| {
        BackendError::from_io(format_args!("sandbox {id}: {what}"), &e)
    };
    let (program, cwd) = match req {
        Request::Spawn { argv, cwd, .. } => {
            (argv.first().cloned().unwrap_or_default(), cwd.clone())
        }
        _ => (String::new(), String::new()),
    };
    let mut control =
        state
            .connect_control(id)
            .map_err(|e| match crate::state::read_meta(state, id) {
                Ok(Some(meta)) if !crate::state::init_alive(state, &meta) => meta.dead_error(),
                _ => SandboxError::InitUnreachable {
                    id: id.into(),
                    detail: e.to_string(),
                }
                .into(),
            })?;
    protocol::send_with_fds(control.as_fd(), req, fds).map_err(|e| io_err("spawn", e))?;
    // PID 1 answers a spawn at once (fork, exec); a silent one is hung.
    control
        .set_read_timeout(Some(SPAWN_REPLY))
        .map_err(|e| io_err("control connection", e))?;
    let reply = protocol::recv_frame_with_fds::<Reply>(&mut control)
        .map_err(|e| io_err("spawn reply", e))?;
    control
        .set_read_timeout(None)
        .map_err(|e| io_err("control connection", e))?;
    match reply {
        Some((Reply::Spawned { pid }, got)) => Ok((control, pid, got)),
        Some((Reply::SpawnFailed { failure, errno }, _)) => {
            Err(spawn_error(failure, errno, &program, &cwd))
        }
        Some((other, _)) => Err(ExecError::UnexpectedReply {
            what: format!("sandbox {id}: spawn"),
            detail: format!("{other:?}"),
        }
        .into()),
        None => Err(SandboxError::InitGone { id: id.into() }.into()),
    }
}

fn spawn_error(failure: SpawnFailure, errno: i32, program: &str, cwd: &str) -> BackendError {
    let program = program.to_string();
    match failure {
        SpawnFailure::ProgramNotFound => ExecError::ProgramNotFound { program },
        SpawnFailure::NotExecutable => ExecError::NotExecutable { program },
        SpawnFailure::CwdNotFound => ExecError::CwdNotFound { cwd: cwd.into() },
        SpawnFailure::BadRequest => ExecError::Malformed { program },
        SpawnFailure::System => ExecError::StartFailed {
            program,
            detail: std::io::Error::from_raw_os_error(errno).to_string(),
        },
    }
    .into()
}

/// The OOM-kill counter of sandbox `id`'s cgroup, when it has one.
pub fn oom_kills(state: &State, id: &str) -> Option<u64> {
    let cg = state.cgroups.as_ref()?.open(id).ok()??;
    cg.oom_kills().ok()
}

/// The exit of a command as `ExitStatus`.
pub fn exit_status(code: Option<i32>, sig: Option<i32>) -> ExitStatus {
    match (code, sig) {
        (Some(c), _) => ExitStatus::Code(c),
        (None, Some(s)) => signal::exit_status(s),
        (None, None) => ExitStatus::Code(-1),
    }
}

/// How long a `SIGKILL`ed command's OOM attribution waits for the
/// cgroup's counter (the kernel bumps it right after sending the signal,
/// so a victim can in principle be reaped a moment before).
const OOM_SETTLE: Duration = Duration::from_millis(50);

/// Tells a run the OOM killer cut short: the sandbox cgroup's `oom_kill`
/// counter, read when the command starts, compared with its value when the
/// command ended, however it ended (the victim may be any process of the
/// run, not only its leader). The counter is the sandbox's: a kill in
/// another command running at the same time counts for this one too.
#[derive(Debug, Clone)]
pub struct OomWatch {
    state: State,
    id: String,
    before: Option<u64>,
}

impl OomWatch {
    /// Reads the counter of sandbox `id` now (blocking).
    pub fn start(state: &State, id: &str) -> Self {
        OomWatch {
            state: state.clone(),
            id: id.to_string(),
            before: oom_kills(state, id),
        }
    }

    /// Whether the leader itself died by `SIGKILL`: the one exit whose
    /// counter bump may lag the reap by a moment.
    fn leader_killed(code: Option<i32>, sig: Option<i32>) -> bool {
        code.is_none() && sig == Some(libc::SIGKILL)
    }

    /// How many processes the OOM killer took since the start (blocking;
    /// `None` without a cgroup counter).
    pub fn kills_since_start(&self, code: Option<i32>, sig: Option<i32>) -> Option<u64> {
        let before = self.before?;
        let attempts = if Self::leader_killed(code, sig) { 2 } else { 1 };
        let mut kills = 0;
        for attempt in 0..attempts {
            kills = oom_kills(&self.state, &self.id)?.saturating_sub(before);
            if kills > 0 {
                break;
            }
            if attempt + 1 < attempts {
                std::thread::sleep(OOM_SETTLE);
            }
        }
        Some(kills)
    }

    /// The exit as `ExitStatus`: [`ExitStatus::OomKilled`] when the counter
    /// rose during the run, else as [`exit_status`] says (blocking).
    pub fn status(&self, code: Option<i32>, sig: Option<i32>) -> ExitStatus {
        match self.kills_since_start(code, sig) {
            Some(n) if n > 0 => ExitStatus::OomKilled,
            _ => exit_status(code, sig),
        }
    }
}

/// Closes the control connection when the exec is dropped half-way: PID 1
/// then kills the command's group.
struct HangUp(UnixStream);

impl Drop for HangUp {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// Runs `req` in sandbox `meta` to completion; a request without a
/// `timeout` gets `default_timeout`.
pub async fn run(
    state: &State,
    meta: &Meta,
    req: ExecRequest,
    default_timeout: Duration,
    sink: &mut dyn OutputSink,
) -> Result<ExecOutcome> {
    let started_at_ms = now_ms();
    let argv = req.command.to_argv();
    let user = SpawnUser::from(req.run_as);
    let env = command_env(meta, &req.env, user);
    let cwd = req
        .cwd
        .as_ref()
        .map_or_else(|| user.default_cwd().to_string(), ToString::to_string);
    let (state2, id) = (state.clone(), meta.id.clone());
    let with_stdin = req.stdin.is_some();
    let (spawned, oom) = corral_backend::task::blocking(EXEC_TASK, move || {
        let oom = OomWatch::start(&state2, &id);
        // Exec's output is usually small, and read whole into a sink:
        // the default pipe costs no `fcntl` on its path.
        let stdio = Stdio {
            stdin: with_stdin,
            output: OutputPipeSize::Default,
        };
        spawn(&state2, &id, argv, env, cwd, user, stdio).map(|s| (s, oom))
    })
    .await?;

    let hangup = HangUp(spawned.control);
    let reactor = |e: std::io::Error| BackendError::from_io("exec streams", &e);
    let clone = || {
        hangup
            .0
            .try_clone()
            .map_err(|e| BackendError::from_io("control connection", &e))
    };
    let control_reader = ControlReader::new(clone()?).map_err(reactor)?;
    let control_writer = clone()?;
    let sources = Sources {
        stdout: Some(spawned.stdout.into_receiver().map_err(reactor)?),
        stderr: Some(spawned.stderr.into_receiver().map_err(reactor)?),
        control: Some(control_reader),
        stdin: match (req.stdin, spawned.stdin) {
            (Some(bytes), Some(w)) => {
                Some(StdinFeed::new(w.into_sender().map_err(reactor)?, bytes))
            }
            _ => None,
        },
    };
    let limit = req.timeout.unwrap_or(default_timeout);
    let mut run = LinuxRun::new(sources, control_writer);
    let limits = Limits {
        timeout: Some(limit),
        abort: req.abort.as_ref(),
        streams: 2,
        // PID 1 kills what a command leaves behind when its leader exits.
        kill: KillPolicy::OnAbortOrTimeout,
        bounds: Bounds {
            kill_confirm: KILL_CONFIRM,
            drain: DRAIN_AFTER_EXIT,
        },
    };
    // An unconfirmed kill settles as the timeout or abort it followed:
    // the connection's end makes PID 1 kill the group anyway.
    let settled = settle(&mut run, limits, sink).await?;
    let finished_at_ms = now_ms().max(started_at_ms);
    match settled.ending {
        Ending::Exited(Exit { code, signal: sig }) => {
            let status = corral_backend::task::blocking(EXEC_TASK, move || {
                Ok::<_, BackendError>(oom.status(code, sig))
            })
            .await?;
            Ok(ExecOutcome {
                status,
                started_at_ms,
                finished_at_ms,
            })
        }
        Ending::TimedOut => Err(ExecError::TimedOut {
            after: limit,
            limit: match req.timeout {
                Some(_) => TimeoutLimit::Requested,
                None => TimeoutLimit::BackendDefault {
                    setting: DEFAULT_TIMEOUT_ENV.into(),
                },
            },
        }
        .into()),
        Ending::Aborted => Err(ExecError::Aborted.into()),
        Ending::Lost if meta.expires_at_ms.is_some_and(|t| now_ms() >= t) => {
            Err(SandboxError::LifetimeEnded {
                id: meta.id.clone(),
            }
            .into())
        }
        Ending::Lost => Err(SandboxError::InitGone {
            id: meta.id.clone(),
        }
        .into()),
    }
}
