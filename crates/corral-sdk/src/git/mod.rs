//! `git`: every git operation, built on runs inside the sandbox.
//!
//! Each method runs the sandbox's own `git` as an argv (no shell, so no
//! quoting), in the repository directory given as the sandbox's working
//! directory, with paths relative to it. That keeps the same semantics on
//! every backend, including `local`, where absolute paths inside a command
//! are host paths. Every run gets `GIT_TERMINAL_PROMPT=0` (git never waits
//! for a terminal) and `LC_ALL=C` (messages stay in English for the error
//! mapping below).
//!
//! ## Authentication
//!
//! `clone`, `pull` and `push` take an optional [`GitAuth`]. The token never
//! appears in an argv, an environment variable, a URL, a log or an error:
//! it is registered as a secret of the sandbox (so it is redacted from every
//! output and error) and handed to git through a pipe: it is the exec's
//! stdin, which a wrapping `sh` moves to descriptor 3 before it runs git,
//! and the one credential helper of that run (given on git's command line;
//! configured helpers are switched off) prints it from there when git
//! asks. It never exists as a file in the sandbox, so nothing is left to
//! remove, whether the run succeeds, fails or is dropped (a password
//! written into a clone URL is registered as a secret too).
//!
//! ## Errors
//!
//! A git run that exits non-zero fails with a [`SandboxError`] whose message
//! is `git <subcommand> exited with <code>: <git's stderr, one line,
//! redacted>`, and whose code is chosen from git's message:
//!
//! | git said                                                   | code          |
//! |------------------------------------------------------------|---------------|
//! | `Authentication failed`, `could not read Username/Password`, HTTP 401/403 | `auth` |
//! | `Could not resolve host`, `Connection refused`, `unable to access`, timed out | `unavailable` |
//! | `not a git repository`, `does not exist`, `did not match any`, `not found`, unknown revision | `not_found` |
//! | anything else (rejected pushes, conflicts, nothing to commit, a dirty tree) | `conflict` |
//!
//! A sandbox without git (exit 127) fails with `unavailable`; output past
//! the SDK's output cap fails with `quota` (a cut answer would be wrong).
//! Bad arguments (a relative directory, an option-like name, a NUL byte)
//! fail with `invalid_input` before anything runs.

mod auth;
mod branches;
mod changes;
mod clone;
mod errors;
mod history;
mod remote;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use corral_backend::Environment;
use corral_backend::{Command, ErrorCode};

pub use auth::GitAuth;
pub use branches::{Branches, CheckoutOptions};
pub use changes::{CommitOptions, DiffOptions, Signature};
pub use clone::CloneOptions;
pub use history::{Commit, LogOptions};
pub use remote::{PullMode, PullOptions, PushOptions};
pub use status::{FileState, GitStatus, StatusEntry};

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::run::{RunOptions, RunResult};
use crate::sandbox::Sandbox;

/// Git operations on one sandbox; made by [`Sandbox::git`].
#[derive(Debug, Clone)]
pub struct Git<'a> {
    sandbox: &'a Sandbox,
    timeout: Option<Duration>,
}

impl Sandbox {
    /// Git operations, run with the sandbox's own `git`.
    pub fn git(&self) -> Git<'_> {
        Git {
            sandbox: self,
            timeout: None,
        }
    }
}

/// One git invocation, before it runs.
pub(crate) struct GitRun<'r> {
    /// The SDK operation, e.g. `git.clone`.
    pub(crate) op: Operation,
    /// The directory git runs in (an absolute sandbox path).
    pub(crate) cwd: &'r str,
    /// The arguments after `git`.
    pub(crate) args: Vec<String>,
    /// Bytes for stdin.
    pub(crate) stdin: Option<Vec<u8>>,
    /// Extra environment.
    pub(crate) env: BTreeMap<String, String>,
}

impl<'r> GitRun<'r> {
    pub(crate) fn new(op: Operation, cwd: &'r str, args: &[&str]) -> Self {
        GitRun {
            op,
            cwd,
            args: args.iter().map(|s| s.to_string()).collect(),
            stdin: None,
            env: BTreeMap::new(),
        }
    }

    pub(crate) fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }
}

impl<'a> Git<'a> {
    /// Every git run of this handle fails with `timeout` (its processes
    /// killed) after `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The sandbox these operations run in.
    pub fn sandbox(&self) -> &'a Sandbox {
        self.sandbox
    }

    /// Runs `run`, optionally with credentials; a non-zero exit is an error.
    pub(crate) async fn exec(&self, run: GitRun<'_>, auth: Option<&GitAuth>) -> Result<RunResult> {
        match auth {
            None => self.exec_plain(run).await,
            Some(auth) => auth::with_credential_pipe(self, run, auth).await,
        }
    }

    /// Runs `run` as is; a non-zero exit is an error.
    pub(crate) async fn exec_plain(&self, run: GitRun<'_>) -> Result<RunResult> {
        let op = run.op;
        let result = self.exec_status(run).await?;
        if result.success() {
            return Ok(result);
        }
        Err(self.exit_error(op, &result))
    }

    /// Runs `argv` (which runs git) with `run`'s directory, stdin and
    /// environment; a non-zero exit is an error.
    pub(crate) async fn exec_plain_argv(
        &self,
        run: GitRun<'_>,
        argv: Vec<String>,
    ) -> Result<RunResult> {
        let op = run.op;
        let result = self.exec_argv(run, argv).await?;
        if result.success() {
            return Ok(result);
        }
        Err(self.exit_error(op, &result))
    }

    /// Runs `run` and returns its result whatever its exit.
    pub(crate) async fn exec_status(&self, mut run: GitRun<'_>) -> Result<RunResult> {
        let mut argv = Vec::with_capacity(run.args.len() + 1);
        argv.push("git".to_string());
        argv.append(&mut run.args);
        self.exec_argv(run, argv).await
    }

    /// Runs `argv` with `run`'s directory, stdin and environment (plus
    /// `GIT_TERMINAL_PROMPT=0` and `LC_ALL=C`), whatever its exit.
    async fn exec_argv(&self, run: GitRun<'_>, argv: Vec<String>) -> Result<RunResult> {
        let mut env = run.env;
        env.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
        env.insert("LC_ALL".into(), "C".into());
        // Made here, once: the names are git's, the values were checked by
        // the call that set them.
        let env = Environment::try_from(env).map_err(|e| self.invalid(run.op, e.to_string()))?;
        let options = RunOptions {
            cwd: Some(run.cwd.to_string()),
            env,
            stdin: run.stdin,
            timeout: self.timeout,
            ..RunOptions::default()
        };
        // The run redacts its output itself: every secret of a git call
        // (token, URL password) is registered before it starts.
        let result = self
            .sandbox
            .run_with(
                Command::argv(argv).map_err(|e| self.invalid(run.op, e.to_string()))?,
                options,
            )
            .await
            .map_err(|e| SandboxError {
                operation: run.op,
                ..e
            })?;
        if result.truncated {
            // A cut status, log or diff would be a wrong answer, not a short one.
            let sub = run.op.member();
            return Err(self.sandbox.fail(
                ErrorCode::Quota,
                run.op,
                format!(
                    "git {sub} printed more than {} bytes; narrow it (paths, max_count)",
                    crate::DEFAULT_MAX_OUTPUT
                ),
            ));
        }
        Ok(result)
    }

    fn exit_error(&self, op: Operation, result: &RunResult) -> SandboxError {
        let stderr = result.stderr_text();
        let code = errors::classify(result.code(), &stderr);
        let sub = op.member();
        let said = errors::one_line(&stderr);
        let message = if code == ErrorCode::Unavailable && result.code() == 127 {
            format!("git is not installed in this sandbox (git {sub} exited with 127)")
        } else if said.is_empty() {
            format!("git {sub} exited with {}", result.code())
        } else {
            format!("git {sub} exited with {}: {said}", result.code())
        };
        self.sandbox.fail(code, op, message)
    }

    pub(crate) fn invalid(&self, op: Operation, message: impl Into<String>) -> SandboxError {
        self.sandbox.fail(ErrorCode::InvalidInput, op, message)
    }

    /// Checks that `dir` is an absolute sandbox path.
    pub(crate) fn check_dir(&self, op: Operation, dir: &str) -> Result<()> {
        if !dir.starts_with('/') {
            return Err(self.invalid(
                op,
                format!("directory {dir:?} is not an absolute sandbox path"),
            ));
        }
        if dir.contains('\0') {
            return Err(self.invalid(op, "directory contains a NUL byte"));
        }
        Ok(())
    }

    /// Checks a branch, remote or revision name given by the caller: not
    /// empty, not option-like, no NUL or line break.
    pub(crate) fn check_name(&self, op: Operation, what: &str, name: &str) -> Result<()> {
        if name.is_empty() {
            return Err(self.invalid(op, format!("{what} is empty")));
        }
        if name.starts_with('-') {
            return Err(self.invalid(
                op,
                format!("{what} {name:?} starts with '-' (it would be read as an option)"),
            ));
        }
        if name.contains(['\0', '\n', '\r']) {
            return Err(self.invalid(
                op,
                format!("{what} {:?} contains a NUL byte or a line break", name),
            ));
        }
        Ok(())
    }

    /// `path` relative to the repository `dir`: a relative path as is, an
    /// absolute one when it lies beneath `dir`.
    pub(crate) fn repo_path(&self, op: Operation, dir: &str, path: &str) -> Result<String> {
        if path.contains('\0') {
            return Err(self.invalid(op, format!("path {path:?} contains a NUL byte")));
        }
        if !path.starts_with('/') {
            if path.is_empty() {
                return Err(self.invalid(op, "path is empty"));
            }
            return Ok(path.to_string());
        }
        let base = dir.trim_end_matches('/');
        if path == base || path == dir {
            return Ok(".".into());
        }
        match path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) {
            Some(rest) if !rest.is_empty() => Ok(rest.to_string()),
            _ => Err(self.invalid(
                op,
                format!("path {path:?} is not inside the repository {dir:?}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn repo_paths_are_made_relative_or_refused() {
        let backend = std::sync::Arc::new(corral_backend_memory::MemoryBackend::new());
        let sb = Sandbox::create(backend, crate::CreateOptions::default())
            .await
            .unwrap();
        let git = sb.git();
        assert_eq!(
            git.repo_path(Operation::GitStatus, "/w/r", "a/b").unwrap(),
            "a/b"
        );
        assert_eq!(
            git.repo_path(Operation::GitStatus, "/w/r", "/w/r/a")
                .unwrap(),
            "a"
        );
        assert_eq!(
            git.repo_path(Operation::GitStatus, "/w/r/", "/w/r")
                .unwrap(),
            "."
        );
        assert!(
            git.repo_path(Operation::GitStatus, "/w/r", "/w/rx/a")
                .is_err()
        );
        assert!(
            git.repo_path(Operation::GitStatus, "/w/r", "/etc/passwd")
                .is_err()
        );
        assert!(
            git.check_name(Operation::GitStatus, "branch", "-f")
                .is_err()
        );
        assert!(git.check_name(Operation::GitStatus, "branch", "").is_err());
        assert!(
            git.check_name(Operation::GitStatus, "branch", "feature/x")
                .is_ok()
        );
        assert!(git.check_dir(Operation::GitStatus, "rel").is_err());
        sb.destroy().await.unwrap();
    }
}
