//! Running a command as a host process in its own process group: the
//! shared engine of backends whose commands are host processes (local, and
//! the helpers of others).
//!
//! The rules it keeps: stdin is closed unless bytes are given; stdout and
//! stderr chunks reach the sink in the order they are read; when the leader
//! exits, whatever is left in its process group is killed; on timeout or
//! abort the whole group is killed and reaped *before* the call settles. A
//! process that must outlive its command has to leave the group (`setsid`),
//! which is what background-process managers do on purpose.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{BackendError, ExecError, PlatformError, RequestError, Result, TimeoutLimit};
use crate::exec::{ExecOutcome, ExitStatus, OutputSink, StreamKind};
use crate::sandbox::now_ms;
use crate::settle::{Bounds, Ending, KillPolicy, Limits, Run, RunEvent, settle};
use crate::signal;

/// How long output is still drained after the group is dead, in case a
/// process that left the group holds the pipes open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// How long a killed group's leader may take to be reaped.
const KILL_CONFIRM: Duration = Duration::from_secs(10);

/// A fully resolved host command.
#[derive(Debug, Clone)]
pub struct HostCommand {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory on the host.
    pub cwd: PathBuf,
    /// The complete environment (nothing is inherited).
    pub env: BTreeMap<String, String>,
    /// Bytes for stdin, then EOF; `None` = stdin closed from the start.
    pub stdin: Option<Vec<u8>>,
    /// Deadline.
    pub timeout: Option<Duration>,
    /// Cancellation.
    pub abort: Option<tokio_util::sync::CancellationToken>,
}

/// Sends `sig` to every process of group `pgid`. A group that is already
/// gone is not an error.
pub fn kill_group(pgid: u32, sig: i32) -> Result<()> {
    let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Err(RequestError::ProcessGroup {
            pgid: i64::from(pgid),
        }
        .into());
    };
    let Some(signal) = rustix::process::Signal::from_named_raw(sig) else {
        return Err(RequestError::Signal { signal: sig }.into());
    };
    match rustix::process::kill_process_group(pid, signal) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(e) => Err(BackendError::from_io(
            format_args!("killing process group {pgid}"),
            &std::io::Error::from(e),
        )),
    }
}

/// Whether any process of group `pgid` still exists (zombies included).
pub fn group_alive(pgid: u32) -> bool {
    let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::test_kill_process_group(pid).is_ok()
}

/// Converts a std exit status.
pub fn exit_status_of(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitStatus::Code(c),
        (None, Some(s)) => signal::exit_status(s),
        (None, None) => ExitStatus::Code(-1),
    }
}

/// Starts `argv` in `cwd` with exactly `env` (nothing inherited) as the
/// leader of a new process group, stdout and stderr piped, stdin piped when
/// `piped_stdin` (else `/dev/null`), killed when the child is dropped. An
/// empty argv or a program that is not executable is `invalid_input`, a
/// program that does not exist `not_found`.
pub fn spawn_group(
    argv: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    piped_stdin: bool,
) -> Result<tokio::process::Child> {
    let Some((program, args)) = argv.split_first() else {
        return Err(RequestError::EmptyArgv.into());
    };
    let mut command = tokio::process::Command::new(program);
    crate::sys::stdio_only(&mut command);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| spawn_error(program, &e))
}

/// Runs `cmd` to completion as described in the module documentation, by
/// the one settle machine ([`crate::settle`]) with the group killed after
/// every ending.
pub async fn run(cmd: HostCommand, sink: &mut dyn OutputSink) -> Result<ExecOutcome> {
    let started_at_ms = now_ms();
    let mut child = spawn_group(&cmd.argv, &cmd.cwd, &cmd.env, cmd.stdin.is_some())?;
    let pgid = child.id().unwrap_or(0);
    let _guard = GroupGuard(pgid);

    if let (Some(bytes), Some(mut stdin)) = (cmd.stdin, child.stdin.take()) {
        tokio::spawn(async move {
            // A child that exits without reading its stdin closes the pipe;
            // that is its business, not an error of the run.
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }
    let mut run = HostRun {
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pgid,
        exited: false,
        wait_failed: None,
        out_buf: vec![0u8; 64 * 1024],
        err_buf: vec![0u8; 64 * 1024],
    };
    let limits = Limits {
        timeout: cmd.timeout,
        abort: cmd.abort.as_ref(),
        streams: 2,
        kill: KillPolicy::Always,
        bounds: Bounds {
            kill_confirm: KILL_CONFIRM,
            drain: DRAIN_AFTER_EXIT,
        },
    };
    let settled = settle(&mut run, limits, sink).await?;
    // The group was killed: what is left of it is reaped before the call
    // settles.
    wait_group_gone(pgid).await;
    let finished_at_ms = now_ms().max(started_at_ms);
    if settled.kill_confirmed == Some(false) {
        return Err(ExecError::KillUnconfirmed {
            what: format!("process group {pgid}"),
            within: KILL_CONFIRM,
        }
        .into());
    }
    match settled.ending {
        Ending::Exited(status) => Ok(ExecOutcome {
            status: exit_status_of(status),
            started_at_ms,
            finished_at_ms,
        }),
        Ending::TimedOut => Err(ExecError::TimedOut {
            after: cmd.timeout.unwrap_or_default(),
            limit: TimeoutLimit::Requested,
        }
        .into()),
        Ending::Aborted => Err(ExecError::Aborted.into()),
        Ending::Lost => Err(match run.wait_failed {
            Some(e) => BackendError::from_io("waiting for the command", &e),
            None => PlatformError::Defective {
                what: "a host command's events ended before its exit".into(),
            }
            .into(),
        }),
    }
}

/// A host process group as [`settle`] drives it: its two pipes and its
/// leader's exit.
struct HostRun {
    child: tokio::process::Child,
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    pgid: u32,
    exited: bool,
    wait_failed: Option<std::io::Error>,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
}

impl Run for HostRun {
    type Exit = std::process::ExitStatus;

    async fn next(&mut self) -> RunEvent<std::process::ExitStatus> {
        if self.exited && self.stdout.is_none() && self.stderr.is_none() {
            return RunEvent::Exhausted;
        }
        let exited = self.exited;
        // Each branch is cancel-safe: a read or a wait dropped unfinished
        // loses nothing.
        tokio::select! {
            biased;
            n = read_some(&mut self.stdout, &mut self.out_buf) => {
                chunk(&mut self.stdout, n, &self.out_buf, StreamKind::Stdout)
            }
            n = read_some(&mut self.stderr, &mut self.err_buf) => {
                chunk(&mut self.stderr, n, &self.err_buf, StreamKind::Stderr)
            }
            status = self.child.wait(), if !exited => {
                self.exited = true;
                match status {
                    Ok(status) => RunEvent::Exited(status),
                    Err(e) => {
                        self.wait_failed = Some(e);
                        RunEvent::Lost
                    }
                }
            }
        }
    }

    fn kill(&mut self) -> Result<()> {
        if self.pgid == 0 {
            return Ok(());
        }
        kill_group(self.pgid, 9)
    }
}

fn spawn_error(program: &str, e: &std::io::Error) -> BackendError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ExecError::ProgramNotFound {
            program: program.into(),
        }
        .into(),
        std::io::ErrorKind::PermissionDenied => ExecError::NotExecutable {
            program: program.into(),
        }
        .into(),
        _ => ExecError::StartFailed {
            program: program.into(),
            detail: e.to_string(),
        }
        .into(),
    }
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    stream: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match stream {
        Some(s) => s.read(buf).await,
        None => std::future::pending().await,
    }
}

/// One read of a pipe as an event: a chunk, or its end (a read error ends
/// it too).
fn chunk<R>(
    stream: &mut Option<R>,
    n: std::io::Result<usize>,
    buf: &[u8],
    kind: StreamKind,
) -> RunEvent<std::process::ExitStatus> {
    match n {
        Ok(0) | Err(_) => {
            *stream = None;
            RunEvent::Closed
        }
        Ok(n) => RunEvent::Output(kind, buf[..n].to_vec()),
    }
}

/// Waits (bounded, about a second) until no process of group `pgid` exists
/// any more. Members reparented elsewhere are reaped by their new parent;
/// the wait only observes.
pub async fn wait_group_gone(pgid: u32) {
    if pgid == 0 {
        return;
    }
    for _ in 0..200 {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Kills the group if the run is dropped half-way (a cancelled future).
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 != 0 {
            let _ = kill_group(self.0, 9);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn spawn(argv: &[&str]) -> Result<tokio::process::Child> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let env = BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]);
        spawn_group(&argv, Path::new("/"), &env, false)
    }

    #[tokio::test]
    async fn spawn_refusals_are_named_and_coded() {
        assert_eq!(spawn(&[]).unwrap_err().code(), ErrorCode::InvalidInput);
        let missing = spawn(&["/nonexistent/program"]).unwrap_err();
        assert_eq!(missing.code(), ErrorCode::NotFound);
        assert!(missing.message().contains("command not found"), "{missing}");
        // A directory is never executable.
        let not_exec = spawn(&["/"]).unwrap_err();
        assert_eq!(not_exec.code(), ErrorCode::InvalidInput, "{not_exec}");
    }

    /// Issue item 1 (inherited descriptors): a descriptor the creator left
    /// without `FD_CLOEXEC` (as a shell's `exec 7</` does) is not among a
    /// host process's descriptors; stdin, stdout and stderr are.
    #[tokio::test]
    async fn a_child_holds_only_stdio_of_the_creators_descriptors() {
        let root = std::fs::File::open("/").unwrap();
        // `dup` clears close-on-exec: the descriptor a child would inherit.
        let inherited = rustix::io::dup(&root).unwrap();
        let n = std::os::fd::AsRawFd::as_raw_fd(&inherited);
        let script = format!(
            "for fd in 0 1 2 {n}; do [ -e /proc/self/fd/$fd ] && echo \"$fd open\" || echo \"$fd closed\"; done"
        );
        let child = spawn(&["sh", "-c", &script]).unwrap();
        let out = child.wait_with_output().await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("0 open\n1 open\n2 open\n{n} closed\n")
        );
        drop(inherited);
    }

    #[tokio::test]
    async fn a_spawned_leader_heads_its_own_group() {
        let mut child = spawn(&["sh", "-c", "exit 3"]).unwrap();
        let pgid = child.id().unwrap();
        assert_eq!(
            rustix::process::getpgid(rustix::process::Pid::from_raw(pgid as i32)).ok(),
            rustix::process::Pid::from_raw(pgid as i32),
            "the leader's group is its own pid"
        );
        assert!(child.stdin.is_none(), "stdin is /dev/null unless piped");
        let status = child.wait().await.unwrap();
        assert_eq!(exit_status_of(status), ExitStatus::Code(3));
        wait_group_gone(pgid).await;
        assert!(!group_alive(pgid));
    }
}
