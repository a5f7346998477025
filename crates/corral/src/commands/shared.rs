//! What `run` and `exec` share: building the request, live output, signals.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use corral_backend::{Backend, CancellationToken, Command, ExecRequest, OutputSink, StreamKind};

use crate::error::{CliError, CliResult, EXIT_INTERRUPTED};
use crate::kv;

/// Writes chunks to this process's stdout and stderr as they arrive.
pub struct LiveOutput;

impl OutputSink for LiveOutput {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        // A closed pipe (`corral run … | head`) is the reader's choice: drop output.
        match stream {
            StreamKind::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(bytes);
                let _ = out.flush();
            }
            StreamKind::Stderr => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(bytes);
                let _ = err.flush();
            }
        }
    }
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
    let mut req = ExecRequest::new(Command::Argv(command));
    req.env = env;
    req.cwd = cwd
        .as_deref()
        .map(|c| corral_backend::sandbox_path("--cwd", c))
        .transpose()
        .map_err(|e| CliError::usage(e.message()))?;
    req.timeout = timeout(timeout_secs)?;
    req.validate().map_err(|e| CliError::usage(e.message()))?;
    Ok(req)
}

/// Cancels `token` on any of [`super::ending_signals::CAUGHT`] and
/// remembers that it did.
pub fn cancel_on_signals(token: CancellationToken) -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    let ending = super::ending_signals::listen();
    tokio::spawn(async move {
        ending.wait().await;
        flag.store(true, Ordering::SeqCst);
        token.cancel();
    });
    interrupted
}

/// Runs `req` in sandbox `id` with live output and maps the settlement to
/// an exit status: the command's own (128 + n for a signal), 124 for a
/// timeout, 130 after Ctrl-C.
pub async fn exec_live(backend: &dyn Backend, id: &str, mut req: ExecRequest) -> CliResult {
    let token = CancellationToken::new();
    req.abort = Some(token.clone());
    let interrupted = cancel_on_signals(token);
    let result = backend.exec(id, req, &mut LiveOutput).await;
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
        Err(_) if interrupted.load(Ordering::SeqCst) => Err(CliError::failure(
            "aborted",
            "interrupted; the command's process group was killed",
        )
        .with_exit(EXIT_INTERRUPTED)),
        Err(e) => Err(e.into()),
    }
}
