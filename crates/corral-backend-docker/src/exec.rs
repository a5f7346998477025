//! `exec` through the engine's exec API.
//!
//! The command runs under a small `sh` wrapper that changes to the working
//! directory (reporting a missing one), checks that the program is there
//! (reporting a missing one), then prints its own pid on the
//! first line of stderr and `exec`s the command. An exec's process is the
//! leader of its own process group and session in the container, so on a
//! timeout or an abort the backend runs `kill -KILL -PGID` in the container
//! — which ends the command and everything it started that stayed in its
//! group — and waits for the attached stream to close before it settles.
//! The wrapper's line is consumed, never shown. Images without `/bin/sh`
//! cannot run commands through this backend.

use std::time::Duration;

use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use corral_backend::{
    Backend, BackendError, ExecError, ExecOutcome, ExecRequest, ExitStatus, OutputSink, Result,
    StreamKind, TimeoutLimit, WORKSPACE_DIR, now_ms,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::DockerBackend;
use crate::error::sandbox_error;
use crate::labels;

/// The wrapper: `$1` is the working directory, the rest the command.
const WRAPPER: &str = "cd -- \"$1\" 2>/dev/null || { printf 'corral-exec: nocwd\\n' >&2; exit 127; }; \
     shift; command -v \"$1\" >/dev/null 2>&1 || { printf 'corral-exec: noprogram\\n' >&2; exit 127; }; \
     printf 'corral-exec: pid %s\\n' \"$$\" >&2; exec \"$@\"";

/// How long a stopped exec may take to report its pid.
const HEADER_WAIT: Duration = Duration::from_secs(3);

/// How long a settling exec may take to close its stream after the kill.
const SETTLE: Duration = Duration::from_secs(10);

/// What the wrapper reported on its first stderr line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header {
    /// Not seen yet.
    Pending,
    /// The command runs as (and leads the process group of) this pid.
    Pid(u32),
    /// The working directory does not exist.
    NoCwd,
    /// The program is not in the sandbox (or not on its `PATH`).
    NoProgram,
}

/// Strips the wrapper's first stderr line and forwards everything else.
struct Demux<'a> {
    sink: &'a mut dyn OutputSink,
    header: Header,
    pending: Vec<u8>,
}

impl Demux<'_> {
    fn forward(&mut self, log: bollard::container::LogOutput) {
        use bollard::container::LogOutput;
        match log {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                self.chunk(StreamKind::Stdout, &message)
            }
            LogOutput::StdErr { message } => self.chunk(StreamKind::Stderr, &message),
            LogOutput::StdIn { .. } => {}
        }
    }

    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        if stream == StreamKind::Stdout || self.header != Header::Pending {
            if !bytes.is_empty() {
                self.sink.chunk(stream, bytes);
            }
            return;
        }
        self.pending.extend_from_slice(bytes);
        let Some(nl) = self.pending.iter().position(|b| *b == b'\n') else {
            return;
        };
        let line = String::from_utf8_lossy(&self.pending[..nl]).to_string();
        self.header = parse_header(&line);
        let rest = self.pending.split_off(nl + 1);
        self.pending.clear();
        if self.header == Header::Pending {
            // Not the wrapper's line (cannot happen with the wrapper above):
            // show it rather than lose output.
            self.header = Header::NoCwd;
            self.sink.chunk(StreamKind::Stderr, line.as_bytes());
        }
        if !rest.is_empty() {
            self.sink.chunk(StreamKind::Stderr, &rest);
        }
    }
}

fn parse_header(line: &str) -> Header {
    match line {
        "corral-exec: nocwd" => return Header::NoCwd,
        "corral-exec: noprogram" => return Header::NoProgram,
        _ => {}
    }
    line.strip_prefix("corral-exec: pid ")
        .and_then(|p| p.trim().parse().ok())
        .map_or(Header::Pending, Header::Pid)
}

/// Why the run stopped before the command ended on its own.
enum Stop {
    Timeout(Duration),
    Abort,
}

pub(crate) async fn exec(
    backend: &DockerBackend,
    id: &str,
    req: ExecRequest,
    sink: &mut dyn OutputSink,
) -> Result<ExecOutcome> {
    corral_backend::check_run_as(backend.name(), &backend.capabilities(), req.run_as)?;
    if !labels::is_sandbox_id(id) {
        return Err(BackendError::sandbox_not_found(id));
    }
    let cwd = req
        .cwd
        .as_ref()
        .map_or_else(|| WORKSPACE_DIR.to_string(), ToString::to_string);
    let mut cmd = vec![
        "/bin/sh".to_string(),
        "-c".into(),
        WRAPPER.into(),
        "corral-exec".into(),
        cwd.clone(),
    ];
    let argv = req.command.to_argv();
    let program = argv.first().cloned().unwrap_or_default();
    cmd.extend(argv);
    let env: Vec<String> = req.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let options = CreateExecOptions {
        attach_stdin: Some(req.stdin.is_some()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        env: (!env.is_empty()).then_some(env),
        cmd: Some(cmd),
        ..CreateExecOptions::default()
    };
    let started_at_ms = now_ms();
    let created = backend
        .docker
        .create_exec(id, options)
        .await
        .map_err(|e| exec_error(id, "exec", &e))?;
    let start = StartExecOptions {
        output_capacity: Some(64 * 1024),
        ..StartExecOptions::default()
    };
    let started = backend
        .docker
        .start_exec(&created.id, Some(start))
        .await
        .map_err(|e| exec_error(id, "exec", &e))?;
    let StartExecResults::Attached { mut output, input } = started else {
        return Err(ExecError::UnexpectedReply {
            what: format!("exec in {id}"),
            detail: "the engine detached a stream corral attached".into(),
        }
        .into());
    };
    let writer = tokio::spawn(async move {
        let mut input = input;
        if let Some(bytes) = req.stdin {
            // A command that exits without reading its stdin closes the
            // pipe: that is not the run's failure.
            let _ = input.write_all(&bytes).await;
            let _ = input.flush().await;
        }
        let _ = input.shutdown().await;
    });
    let mut demux = Demux {
        sink,
        header: Header::Pending,
        pending: Vec::new(),
    };
    let deadline = req.timeout.map(|t| tokio::time::Instant::now() + t);
    let abort = req.abort.clone().unwrap_or_default();
    let stop = loop {
        let next = tokio::select! {
            item = output.next() => item,
            () = sleep_until(deadline) => break req.timeout.map(Stop::Timeout),
            () = abort.cancelled() => break Some(Stop::Abort),
        };
        match next {
            None => break None,
            Some(Ok(log)) => demux.forward(log),
            Some(Err(e)) => {
                writer.abort();
                return Err(exec_error(id, "exec output", &e));
            }
        }
    };
    if let Some(stop) = stop {
        // The wrapper prints its pid before the command starts: wait for
        // that line if the deadline came first.
        let _ = tokio::time::timeout(HEADER_WAIT, async {
            while demux.header == Header::Pending {
                match output.next().await {
                    Some(Ok(log)) => demux.forward(log),
                    _ => break,
                }
            }
        })
        .await;
        kill_group(backend, id, demux.header).await;
        // Drain until the engine closes the stream: the group is dead.
        let _ = tokio::time::timeout(SETTLE, async {
            while let Some(Ok(_)) = output.next().await {}
        })
        .await;
        writer.abort();
        return Err(match stop {
            Stop::Timeout(after) => ExecError::TimedOut {
                after,
                limit: TimeoutLimit::Requested,
            }
            .into(),
            Stop::Abort => ExecError::Aborted.into(),
        });
    }
    writer.abort();
    match demux.header {
        Header::NoCwd => return Err(ExecError::CwdNotFound { cwd }.into()),
        Header::NoProgram => return Err(ExecError::ProgramNotFound { program }.into()),
        Header::Pending | Header::Pid(_) => {}
    }
    let code = exit_code(backend, id, &created.id).await?;
    if demux.header == Header::Pending && code != 0 {
        return Err(ExecError::ShellMissing {
            shell: "/bin/sh".into(),
            code: code.into(),
        }
        .into());
    }
    Ok(ExecOutcome {
        status: ExitStatus::Code(code),
        started_at_ms,
        finished_at_ms: now_ms().max(started_at_ms),
    })
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The exit code of a finished exec (the engine may record it a moment
/// after the stream closes).
async fn exit_code(backend: &DockerBackend, id: &str, exec_id: &str) -> Result<i32> {
    for attempt in 0..50u64 {
        let inspect = backend
            .docker
            .inspect_exec(exec_id)
            .await
            .map_err(|e| exec_error(id, "exec result", &e))?;
        if inspect.running != Some(true)
            && let Some(code) = inspect.exit_code
        {
            return Ok(code as i32);
        }
        tokio::time::sleep(Duration::from_millis(2 + attempt * 2)).await;
    }
    Err(ExecError::NoExitStatus {
        what: format!("exec in {id}"),
    }
    .into())
}

/// Kills the process group the wrapper reported. A wrapper that never
/// reported its pid (an engine that stalled it past [`HEADER_WAIT`]) leaves
/// no group to name: then every process but PID 1 and the killer is
/// killed — the command must not outlive its settled run.
async fn kill_group(backend: &DockerBackend, id: &str, header: Header) {
    let script = match header {
        Header::Pid(pid) => format!("kill -KILL -{pid} 2>/dev/null; true"),
        Header::Pending | Header::NoCwd | Header::NoProgram => {
            "for p in /proc/[0-9]*; do n=${p#/proc/}; [ \"$n\" = 1 ] || [ \"$n\" = $$ ] || \
             kill -KILL \"$n\" 2>/dev/null; done; true"
                .to_string()
        }
    };
    let options = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(vec!["/bin/sh".to_string(), "-c".into(), script]),
        ..CreateExecOptions::default()
    };
    let Ok(created) = backend.docker.create_exec(id, options).await else {
        return;
    };
    if let Ok(StartExecResults::Attached { mut output, .. }) =
        backend.docker.start_exec(&created.id, None).await
    {
        let _ = tokio::time::timeout(SETTLE, async {
            while let Some(Ok(_)) = output.next().await {}
        })
        .await;
    }
}

/// Maps an engine error of an exec in sandbox `id`: a missing container is
/// the sandbox's `not_found`, a paused or stopped one a `conflict`.
fn exec_error(id: &str, what: &str, e: &bollard::errors::Error) -> BackendError {
    sandbox_error(id, &format!("{what} in {id}"), e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::CollectedOutput;

    #[test]
    fn the_wrapper_line_is_consumed_and_parsed() {
        let mut out = CollectedOutput::default();
        let mut d = Demux {
            sink: &mut out,
            header: Header::Pending,
            pending: Vec::new(),
        };
        d.chunk(StreamKind::Stderr, b"corral-exec: pi");
        d.chunk(StreamKind::Stdout, b"out");
        d.chunk(StreamKind::Stderr, b"d 42\nerr");
        assert_eq!(d.header, Header::Pid(42));
        assert_eq!(out.stdout, b"out");
        assert_eq!(out.stderr, b"err");
        assert_eq!(parse_header("corral-exec: nocwd"), Header::NoCwd);
        assert_eq!(parse_header("corral-exec: noprogram"), Header::NoProgram);
        assert_eq!(parse_header("something else"), Header::Pending);
    }
}
