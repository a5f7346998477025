//! `run`: one command to completion, with timeout, abort, output cap and streaming.

use std::collections::BTreeMap;
use std::time::Duration;

use corral_backend::{CancellationToken, CollectedOutput, Command, ExecRequest, ExitStatus};

use crate::error::Result;
use crate::sandbox::Sandbox;

/// How to run one command.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Working directory (absolute); default: the sandbox's home.
    pub cwd: Option<String>,
    /// Variables added to the environment.
    pub env: BTreeMap<String, String>,
    /// Bytes for stdin, which is then closed; default: stdin closed at once.
    pub stdin: Option<Vec<u8>>,
    /// Kill the whole process tree and fail with `timeout` after this long.
    pub timeout: Option<Duration>,
    /// Kill the whole process tree and fail with `aborted` when cancelled.
    pub abort: Option<CancellationToken>,
}

/// A command that ran to its end. A non-zero exit is a result, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    /// How it ended.
    pub exit: ExitStatus,
    /// Its standard output (secrets redacted).
    pub stdout: Vec<u8>,
    /// Its standard error (secrets redacted).
    pub stderr: Vec<u8>,
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
    /// Runs a shell command (`sh -c`) to completion.
    pub async fn run(&self, script: &str) -> Result<RunResult> {
        self.run_with(Command::shell(script), RunOptions::default())
            .await
    }

    /// Runs `command` to completion with `options`.
    pub async fn run_with(&self, command: Command, options: RunOptions) -> Result<RunResult> {
        let req = ExecRequest {
            command,
            cwd: options.cwd,
            env: options.env,
            stdin: options.stdin,
            timeout: options.timeout,
            abort: options.abort,
            activity_path: None,
        };
        let mut out = CollectedOutput::default();
        let outcome = self
            .backend()
            .exec(self.id(), req, &mut out)
            .await
            .map_err(|e| self.error("run", e))?;
        Ok(RunResult {
            exit: outcome.status,
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
}
