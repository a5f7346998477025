//! What `run` and `exec` share: building the request, live output, signals.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use corral_backend::{Backend, CancellationToken, Command, ExecRequest, OutputSink, StreamKind};
use corral_sdk::{Redactor, StreamRedactor};

use crate::error::{CliError, CliResult, EXIT_BROKEN_PIPE};
use crate::kv;

use super::ending_signals::Ending;

/// Writes chunks to this process's stdout and stderr as they arrive, each
/// stream through its own redactor of the run's secrets. A write that
/// finds the pipe closed (`EPIPE`: `corral run -- yes | head -1`) cancels
/// `abort`, which kills the command's process group, and drops everything
/// after it.
pub struct LiveOutput {
    abort: CancellationToken,
    closed: Arc<AtomicBool>,
    stdout: StreamRedactor,
    stderr: StreamRedactor,
}

impl LiveOutput {
    /// Live output that cancels `abort` on a closed pipe.
    pub fn new(abort: CancellationToken) -> Self {
        LiveOutput::redacting(abort, &Redactor::default())
    }

    /// Live output that cancels `abort` on a closed pipe and replaces
    /// `redactor`'s secrets with `[REDACTED]`.
    pub fn redacting(abort: CancellationToken, redactor: &Redactor) -> Self {
        LiveOutput {
            abort,
            closed: Arc::new(AtomicBool::new(false)),
            stdout: redactor.stream(),
            stderr: redactor.stream(),
        }
    }

    /// Writes what the redactors still hold: the end of both streams.
    pub fn finish(&mut self) {
        let (out, err) = (self.stdout.finish(), self.stderr.finish());
        self.write(StreamKind::Stdout, &out);
        self.write(StreamKind::Stderr, &err);
    }

    /// Whether a write found stdout or stderr closed.
    pub fn pipe_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Writes `bytes` (already redacted) to `stream`; a closed pipe ends
    /// the run.
    fn write(&mut self, stream: StreamKind, bytes: &[u8]) {
        if self.pipe_closed() || bytes.is_empty() {
            return;
        }
        let written = match stream {
            StreamKind::Stdout => write_flushed(&mut io::stdout().lock(), bytes),
            StreamKind::Stderr => write_flushed(&mut io::stderr().lock(), bytes),
        };
        // Other failures (a full disk behind a redirect) drop the chunk and
        // go on, as before; only a reader that is gone ends the run.
        if written.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
            self.closed.store(true, Ordering::SeqCst);
            self.abort.cancel();
        }
    }
}

impl OutputSink for LiveOutput {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        let decided = match stream {
            StreamKind::Stdout => self.stdout.push(bytes),
            StreamKind::Stderr => self.stderr.push(bytes),
        };
        self.write(stream, &decided);
    }
}

fn write_flushed(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

/// Attaches to sandbox `id`, on the backend `named` or the one that
/// issued it (`not_found` when it is gone).
pub async fn sandbox(named: Option<&str>, id: &str) -> Result<corral_sdk::Sandbox, CliError> {
    let backend = crate::backends::for_id(named, id).await?;
    Ok(corral_sdk::Sandbox::connect_id(backend, id).await?)
}

/// Parses `--timeout SECS`.
pub fn timeout(secs: Option<f64>) -> Result<Option<Duration>, CliError> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 365.0 * 86_400.0 => {
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(s) => Err(CliError::usage(format!(
            "--timeout {s}: expected a positive number of seconds"
        ))),
    }
}

/// Builds and validates the exec request from the command line's parts.
pub fn request(
    command: Vec<String>,
    env: &[String],
    cwd: Option<String>,
    timeout_secs: Option<f64>,
) -> Result<ExecRequest, CliError> {
    // Each pair is checked once, where the environment is made.
    let env = kv::parse_env(env)?;
    let cwd = cwd
        .as_deref()
        .map(|c| corral_backend::sandbox_path("--cwd", c))
        .transpose()
        .map_err(|e| CliError::usage(e.message()))?;
    let timeout = timeout(timeout_secs)?;
    // Checked where it is made, after the options, whose errors come first.
    let command = Command::argv(command).map_err(|e| CliError::usage(e.to_string()))?;
    let mut req = ExecRequest::new(command);
    req.env = env;
    req.cwd = cwd;
    req.timeout = timeout;
    Ok(req)
}

/// `e` with every secret of `redactor` replaced in its message.
pub fn redacted(mut e: CliError, redactor: &Redactor) -> CliError {
    e.message = redactor.redact(&e.message);
    e
}

/// The failure after `ending`'s signal, exiting 128 + its number; `when`
/// says what it interrupted.
pub fn interrupted(ending: &Ending, when: &str) -> Option<CliError> {
    let signal = ending.signal()?;
    Some(
        CliError::failure("aborted", format!("interrupted by {}{when}", signal.name))
            .with_exit(signal.exit_status()),
    )
}

/// Runs `req` in sandbox `id` with live output and maps the settlement to
/// an exit status: the command's own (128 + n for a signal), 124 for a
/// timeout, 128 + n after one of `ending`'s signals (which kills the
/// command's process group), 141 when stdout or stderr was closed. A
/// signal that arrived before it starts nothing.
pub async fn exec_live(
    backend: &dyn Backend,
    id: &str,
    req: ExecRequest,
    ending: &Ending,
) -> CliResult {
    exec_live_redacted(backend, id, req, ending, &Redactor::default()).await
}

/// [`exec_live`] with every secret of `redactor` replaced by
/// `[REDACTED]` in the output and in the error line.
pub async fn exec_live_redacted(
    backend: &dyn Backend,
    id: &str,
    mut req: ExecRequest,
    ending: &Ending,
    redactor: &Redactor,
) -> CliResult {
    if let Some(e) = interrupted(ending, " before the command started") {
        return Err(e);
    }
    let token = CancellationToken::new();
    req.abort = Some(token.clone());
    let on_signal = {
        let (ending, token) = (ending.clone(), token.clone());
        tokio::spawn(async move {
            ending.wait().await;
            token.cancel();
        })
    };
    let mut output = LiveOutput::redacting(token, redactor);
    let result = backend.exec(id, req, &mut output).await;
    output.finish();
    on_signal.abort();
    if output.pipe_closed() {
        // The reader chose to stop: what the command would have met writing
        // to the pipe itself, and nothing to say on a stderr that may be
        // the same pipe.
        return Ok(EXIT_BROKEN_PIPE);
    }
    match result {
        Ok(outcome) => {
            if outcome.status == corral_backend::ExitStatus::OomKilled {
                eprintln!(
                    "corral: the command was killed: out of memory (the sandbox reached its \
                     memory limit)"
                );
            }
            Ok(outcome.status.shell_code())
        }
        Err(e) => Err(
            interrupted(ending, "; the command's process group was killed")
                .unwrap_or_else(|| redacted(e.into(), redactor)),
        ),
    }
}
