//! `-i` without `-t` (`corral exec -i ID -- CMD`, `corral run -i -- CMD`):
//! the command runs as a live process (the `start_process` primitive) and
//! this process's stdin is copied to its stdin as it arrives; EOF on
//! stdin closes the command's stdin. Output, the exit status and the
//! endings are those of [`super::shared::exec_live`]: the command's code,
//! 124 after `--timeout`, 128 + n after a caught ending signal, 141 when
//! stdout or stderr was closed; each of the last three kills the command's
//! process group.

use std::pin::Pin;
use std::time::Duration;

use corral_backend::{
    CancellationToken, ExecError, ExecRequest, ExitStatus, OutputSink, ProcessOps, ProcessSpec,
    StartedProcess, StreamKind, TimeoutLimit,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::{CliError, CliResult, EXIT_BROKEN_PIPE};

use super::ending_signals::Ending;
use super::shared::{LiveOutput, interrupted};
use super::stdin_feed::StdinFeed;

/// How long output may go on arriving after the command ended (a child it
/// left behind may hold its stdout open).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// How the command's run ended.
enum Settled {
    /// On its own.
    Exited(corral_backend::Result<ExitStatus>),
    /// One of the ending signals arrived.
    Signalled,
    /// `--timeout` passed.
    TimedOut(Duration),
    /// Stdout or stderr was a pipe its reader closed.
    PipeClosed,
}

/// Runs `req` in sandbox `id` as a live process fed from stdin.
pub async fn exec_with_stdin(
    processes: &dyn ProcessOps,
    id: &str,
    req: ExecRequest,
    ending: &Ending,
) -> CliResult {
    if let Some(e) = interrupted(ending, " before the command started") {
        return Err(e);
    }
    let spec = ProcessSpec {
        command: req.command,
        cwd: req.cwd,
        env: req.env,
        run_as: req.run_as,
    };
    let StartedProcess {
        stdin,
        stdout,
        stderr,
        control,
    } = processes.start_process(id, spec).await?;
    let feeding = tokio::spawn(feed(stdin));
    let abort = CancellationToken::new();
    let mut output = LiveOutput::new(abort.clone());
    let settled = {
        let pump = pump(stdout, stderr, &mut output);
        tokio::pin!(pump);
        let settle = async {
            tokio::select! {
                status = control.wait() => Settled::Exited(status),
                () = ending.wait() => Settled::Signalled,
                () = abort.cancelled() => Settled::PipeClosed,
                after = elapsed(req.timeout) => Settled::TimedOut(after),
            }
        };
        tokio::pin!(settle);
        let mut pumped = false;
        let settled = loop {
            tokio::select! {
                () = &mut pump, if !pumped => pumped = true,
                settled = &mut settle => break settled,
            }
        };
        if !matches!(settled, Settled::Exited(_)) {
            // What ends the run early ends the whole group; its output then
            // reaches EOF.
            let _ = control.kill().await;
        }
        if !pumped {
            let _ = tokio::time::timeout(OUTPUT_DRAIN, &mut pump).await;
        }
        settled
    };
    feeding.abort();
    if output.pipe_closed() {
        return Ok(EXIT_BROKEN_PIPE);
    }
    match settled {
        Settled::Exited(status) => Ok(status?.shell_code()),
        Settled::PipeClosed => Ok(EXIT_BROKEN_PIPE),
        Settled::Signalled => Err(
            interrupted(ending, "; the command's process group was killed")
                .unwrap_or_else(|| CliError::failure("aborted", "interrupted")),
        ),
        Settled::TimedOut(after) => Err(CliError::from(corral_backend::BackendError::from(
            ExecError::TimedOut {
                after,
                limit: TimeoutLimit::Requested,
            },
        ))),
    }
}

/// Resolves after `timeout`, never without one.
pub async fn elapsed(timeout: Option<Duration>) -> Duration {
    match timeout {
        Some(after) => {
            tokio::time::sleep(after).await;
            after
        }
        None => std::future::pending().await,
    }
}

/// Copies stdin to the command's stdin; its EOF closes the command's
/// stdin. A command that closed its stdin takes no more: the rest is
/// dropped.
async fn feed(mut to: Pin<Box<dyn AsyncWrite + Send>>) {
    let mut from = StdinFeed::start();
    while let Some(chunk) = from.next().await {
        if to.write_all(&chunk).await.is_err() || to.flush().await.is_err() {
            return;
        }
    }
    let _ = to.shutdown().await;
}

/// Copies the command's stdout and stderr into `output` until both end.
async fn pump(
    mut stdout: Pin<Box<dyn AsyncRead + Send>>,
    mut stderr: Pin<Box<dyn AsyncRead + Send>>,
    output: &mut LiveOutput,
) {
    let (mut out_buf, mut err_buf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    let (mut out_open, mut err_open) = (true, true);
    while out_open || err_open {
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(n) if n > 0 => output.chunk(StreamKind::Stdout, &out_buf[..n]),
                _ => out_open = false,
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(n) if n > 0 => output.chunk(StreamKind::Stderr, &err_buf[..n]),
                _ => err_open = false,
            },
        }
    }
}
