//! The `exec` primitive's request, streamed output and outcome.

use std::time::Duration;

use corral_contract::Environment;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::command::Command;
use crate::path::SandboxPath;
use crate::signal::SignalName;

/// Whom a command runs as, inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunAs {
    /// The sandbox's root: what every backend runs commands as when no
    /// identity is asked for.
    Root,
    /// The sandbox's unprivileged user: uid 1000, gid 1000, home
    /// `/home/user`, no capabilities. Only a backend declaring
    /// [`crate::Capabilities::run_as_user`] runs it; any other refuses it
    /// with `unsupported` ([`crate::check_run_as`]).
    User,
}

/// One `exec` call.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// What to run.
    pub command: Command,
    /// Working directory inside the sandbox (absolute); `None` = the sandbox's home.
    pub cwd: Option<SandboxPath>,
    /// Variables added to the sandbox's environment for this command.
    pub env: Environment,
    /// Bytes written to stdin, which is then closed. `None`: stdin is closed at once.
    pub stdin: Option<Vec<u8>>,
    /// Kill the whole process group and fail with `timeout` after this long.
    pub timeout: Option<Duration>,
    /// Kill the whole process group and fail with `aborted` when cancelled.
    pub abort: Option<CancellationToken>,
    /// The SDK core's activity record for this run, set only for a backend
    /// the SDK was opened over with the `inline_activity` hint
    /// (`corral_sdk::ProviderHints`): such a backend creates this file (in
    /// the sandbox) before the command starts and removes it when the run
    /// settles — success, failure, timeout and abort alike. Otherwise it is
    /// `None` and the core keeps the record itself through file calls.
    pub activity_path: Option<SandboxPath>,
    /// Whom the command runs as; `None` = the backend's default, root.
    pub run_as: Option<RunAs>,
}

impl ExecRequest {
    /// A request running `command` with nothing else set.
    pub fn new(command: Command) -> Self {
        ExecRequest {
            command,
            cwd: None,
            env: Environment::new(),
            stdin: None,
            timeout: None,
            abort: None,
            activity_path: None,
            run_as: None,
        }
    }

    /// Sets whom the command runs as.
    pub fn run_as(mut self, who: RunAs) -> Self {
        self.run_as = Some(who);
        self
    }

    /// Sets stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Sets the timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, dir: SandboxPath) -> Self {
        self.cwd = Some(dir);
        self
    }

    /// Sets the variables added for this command.
    pub fn env(mut self, env: Environment) -> Self {
        self.env = env;
        self
    }

    /// Sets the abort token.
    pub fn abort(mut self, token: CancellationToken) -> Self {
        self.abort = Some(token);
        self
    }
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Receives output chunks in the order they arrived, as they arrive.
pub trait OutputSink: Send {
    /// One chunk of one stream.
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]);
}

impl<F: FnMut(StreamKind, &[u8]) + Send> OutputSink for F {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        self(stream, bytes)
    }
}

/// A sink that keeps everything, for callers that want the whole output.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CollectedOutput {
    /// All stdout bytes.
    pub stdout: Vec<u8>,
    /// All stderr bytes.
    pub stderr: Vec<u8>,
    /// Every chunk in arrival order.
    pub chunks: Vec<(StreamKind, Vec<u8>)>,
}

impl OutputSink for CollectedOutput {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        match stream {
            StreamKind::Stdout => self.stdout.extend_from_slice(bytes),
            StreamKind::Stderr => self.stderr.extend_from_slice(bytes),
        }
        self.chunks.push((stream, bytes.to_vec()));
    }
}

/// How a command ended on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal the contract names killed it (`SIGKILL`, `SIGSEGV`, …: the
    /// standard signals 1–31).
    Signal(SignalName),
    /// A signal the contract has no name for killed it (a real-time signal,
    /// 32–64), by number. The contract's exit object cannot carry it, so the
    /// runtime refuses it as a provider defect rather than rename it.
    UnnamedSignal(i32),
    /// The kernel's out-of-memory killer ended it because the sandbox reached
    /// its memory limit (a `SIGKILL` the backend attributed to the limit).
    OomKilled,
}

impl ExitStatus {
    /// True for exit code 0.
    pub fn success(&self) -> bool {
        matches!(self, ExitStatus::Code(0))
    }

    /// The code a shell would report: the code, or 128 + the signal number
    /// (`SIGKILL`'s for the out-of-memory killer).
    pub fn shell_code(&self) -> i32 {
        match self {
            ExitStatus::Code(c) => *c,
            ExitStatus::Signal(name) => 128 + name.number(),
            ExitStatus::UnnamedSignal(n) => 128 + n,
            ExitStatus::OomKilled => 128 + SignalName::Sigkill.number(),
        }
    }
}

/// The settlement of a command that ended on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutcome {
    /// How it ended.
    pub status: ExitStatus,
    /// Start, epoch milliseconds.
    pub started_at_ms: u64,
    /// End, epoch milliseconds (never before the start).
    pub finished_at_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::{ExitStatus, SignalName};

    #[test]
    fn shell_codes_are_the_code_or_128_plus_the_signal() {
        assert_eq!(ExitStatus::Code(3).shell_code(), 3);
        assert_eq!(ExitStatus::Signal(SignalName::Sigterm).shell_code(), 143);
        assert_eq!(ExitStatus::UnnamedSignal(34).shell_code(), 162);
        assert_eq!(ExitStatus::OomKilled.shell_code(), 137);
    }
}
