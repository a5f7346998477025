//! `run`: one command to completion, with timeout, abort, output cap,
//! redaction, streaming callbacks and an activity record.

use std::time::Duration;

use corral_backend::Environment;
use corral_backend::{CancellationToken, ErrorCode, ExecRequest, ExitStatus};

use crate::Operation;
use crate::activity::new_run_id;
use crate::error::Result;
use crate::output::{OutputCallback, RunSink};
use crate::sandbox::{Sandbox, merge_secret_env};
use crate::sh::IntoCommand;

/// How many bytes of each stream a [`RunResult`] keeps by default (16 MiB).
pub const DEFAULT_MAX_OUTPUT: usize = 16 * 1024 * 1024;

/// How to run one command.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Working directory (absolute); default: the sandbox's home.
    pub cwd: Option<String>,
    /// Variables added to the environment.
    pub env: Environment,
    /// Variables added to the environment whose values are secrets: passed
    /// like `env`, and registered on the sandbox handle
    /// ([`Sandbox::add_secret`]) before the command starts. A name may not
    /// be in both `env` and `secret_env`.
    pub secret_env: Environment,
    /// Bytes for stdin, which is then closed; default: stdin closed at once.
    pub stdin: Option<Vec<u8>>,
    /// Kill the whole process tree and fail with `timeout` after this long.
    pub timeout: Option<Duration>,
    /// Kill the whole process tree and fail with `aborted` when cancelled.
    pub abort: Option<CancellationToken>,
    /// Most bytes of each stream the result keeps; `None`:
    /// [`DEFAULT_MAX_OUTPUT`]. Bytes past it are dropped from the result
    /// and counted ([`RunResult::truncated`]); callbacks and streams still
    /// see every byte.
    pub max_output: Option<usize>,
    /// Called with every redacted output chunk as it arrives.
    pub on_output: Option<OutputCallback>,
}

/// A command that ran to its end. A non-zero exit (or a signal) is a
/// result, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    /// How it ended.
    pub exit: ExitStatus,
    /// Its standard output (secrets redacted), at most the output cap.
    pub stdout: Vec<u8>,
    /// Its standard error (secrets redacted), at most the output cap.
    pub stderr: Vec<u8>,
    /// True when the output cap dropped bytes of either stream.
    pub truncated: bool,
    /// Bytes of standard output the cap dropped.
    pub stdout_dropped: u64,
    /// Bytes of standard error the cap dropped.
    pub stderr_dropped: u64,
    /// The run's id (the name of its activity record).
    pub run_id: String,
}

impl RunResult {
    /// The exit code a shell would report.
    pub fn code(&self) -> i32 {
        self.exit.shell_code()
    }

    /// True for exit code 0.
    pub fn success(&self) -> bool {
        self.exit.success()
    }

    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

impl Sandbox {
    /// Runs a shell command (`sh -c`) — a `&str`, a `String` or an
    /// [`sh!`](crate::sh!) script — or a [`corral_backend::Command`] to
    /// completion with default options.
    pub async fn run(&self, command: impl IntoCommand) -> Result<RunResult> {
        self.run_with(command, RunOptions::default()).await
    }

    /// Runs `command` to completion with `options`.
    ///
    /// Fails with `invalid_input` (before anything runs) for a bad command,
    /// environment or working directory, with `timeout` or `aborted` after
    /// the whole process tree was killed, and with the backend's code for
    /// an infrastructure failure. Every message is redacted.
    pub async fn run_with(
        &self,
        command: impl IntoCommand,
        options: RunOptions,
    ) -> Result<RunResult> {
        let command = command
            .into_command()
            .map_err(|msg| self.fail(ErrorCode::InvalidInput, Operation::Run, msg))?;
        for (_, v) in options.secret_env.iter() {
            self.add_secret(v.to_owned());
        }
        let env = merge_secret_env(options.env, options.secret_env)
            .map_err(|msg| self.fail(ErrorCode::InvalidInput, Operation::Run, msg))?;
        let mut req = ExecRequest {
            command,
            cwd: options
                .cwd
                .as_deref()
                .map(|c| corral_backend::sandbox_path("cwd", c))
                .transpose()
                .map_err(|e| self.error(Operation::Run, e))?,
            env,
            stdin: options.stdin,
            timeout: options.timeout,
            abort: options.abort,
            activity_path: None,
            run_as: None,
        };
        let redactor = self.redactor();
        let cap = options.max_output.unwrap_or(DEFAULT_MAX_OUTPUT);
        let mut sink = RunSink::new(&redactor, cap, options.on_output);
        let run_id = new_run_id();
        let record = self.begin_activity(&run_id).await?;
        if record.inline {
            req.activity_path = Some(record.path.clone());
        }
        let outcome = self.backend().exec(self.id(), req, &mut sink).await;
        record.end().await;
        sink.finish();
        let outcome = outcome.map_err(|e| self.error(Operation::Run, e))?;
        let truncated = sink.stdout.dropped > 0 || sink.stderr.dropped > 0;
        Ok(RunResult {
            exit: outcome.status,
            stdout: sink.stdout.bytes,
            stderr: sink.stderr.bytes,
            truncated,
            stdout_dropped: sink.stdout.dropped,
            stderr_dropped: sink.stderr.dropped,
            run_id,
        })
    }
}
