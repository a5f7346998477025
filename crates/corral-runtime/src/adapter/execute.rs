//! `execute`: one bounded command to completion.
//!
//! - `argv` runs as given; `shell` runs as `sh -c SCRIPT`; `stdin` is written
//!   then closed (absent: closed at once); `timeout_seconds`, `environment`
//!   and `working_directory` go to the backend's `exec`, which kills the
//!   whole process group at the deadline before it settles.
//! - Output is captured per stream, at most `output_limit_bytes` bytes each:
//!   bytes beyond the limit are dropped as they arrive (never buffered) and
//!   the stream is marked `truncated`, so a truncated stream holds exactly
//!   the limit. The command runs on; overflow is not an exit cause.
//! - Exactly one exit cause: the code (0–255) or the signal the backend
//!   reports, or `timed_out` when the backend ended the command at its
//!   deadline — with whatever output arrived before.
//! - The interval is the backend's start and end of the command (its own
//!   clock); for a timed-out command, which the backend reports without an
//!   outcome, the adapter's clock around the call. Both are clamped to be
//!   monotonic.
//! - A command the backend could not start (a missing program or working
//!   directory) is `SandboxOperationFailed{execute, spawn_failed}`; a
//!   sandbox that is gone is `SandboxInstanceNotFound`.

use corral_backend::{
    Backend, BackendError, Command, ErrorCode, ExecRequest, ExitStatus, OutputSink, RequestError,
    SandboxError as BackendSandboxError, StreamKind,
};
use corral_contract::{
    CommandLine, ExecuteRequest, ExitCause, ExitCode, FailureReason, InstanceId, Interval,
    Operation, OutputBytes, SandboxCommand, SandboxError, SandboxExecutionResult, SignalName,
    StreamCapture, Timestamp,
};

use super::ContractAdapter;
use super::clock;
use super::errors::{Subject, failed, from_backend};

/// Keeps the first `limit` bytes of each stream and whether more came.
#[derive(Debug)]
pub(crate) struct BoundedCapture {
    limit: usize,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stdout_truncated: bool,
    stderr_truncated: bool,
}

impl BoundedCapture {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdout_truncated: false,
            stderr_truncated: false,
        }
    }

    fn into_streams(
        self,
        operation: Operation,
    ) -> Result<(StreamCapture, StreamCapture), SandboxError> {
        let capture = |content: Vec<u8>, truncated| {
            OutputBytes::new(content)
                .map(|content| StreamCapture { content, truncated })
                .map_err(|_| failed(operation, FailureReason::ResourceExhausted))
        };
        Ok((
            capture(self.stdout, self.stdout_truncated)?,
            capture(self.stderr, self.stderr_truncated)?,
        ))
    }
}

impl OutputSink for BoundedCapture {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        let (kept, truncated) = match stream {
            StreamKind::Stdout => (&mut self.stdout, &mut self.stdout_truncated),
            StreamKind::Stderr => (&mut self.stderr, &mut self.stderr_truncated),
        };
        let room = self.limit.saturating_sub(kept.len());
        if bytes.len() > room {
            kept.extend_from_slice(&bytes[..room]);
            *truncated = true;
        } else {
            kept.extend_from_slice(bytes);
        }
    }
}

/// The backend's command for a contract command. The contract's command
/// line is looser than the backend's (it admits an empty program or a blank
/// script): one the backend's [`Command`] refuses is a [`RequestError`],
/// which [`start_failure`] reads as `spawn_failed`, as it did when the
/// backend refused it.
fn exec_request(command: &SandboxCommand) -> Result<ExecRequest, RequestError> {
    let backend_command = match &command.command {
        CommandLine::Argv { argv } => Command::argv(argv.arguments().iter())?,
        CommandLine::Shell { shell } => Command::shell(shell.as_str())?,
    };
    let mut request = ExecRequest::new(backend_command);
    request.stdin = command.stdin.as_ref().map(|s| s.to_vec());
    request.timeout = Some(std::time::Duration::from_secs(
        command.timeout_seconds.get(),
    ));
    request.cwd = command.working_directory.clone();
    request.env = command.environment.clone();
    Ok(request)
}

/// How the backend's exit status reads as a contract exit: a code 0–255 or
/// a signal 1–31 by name; anything else is a backend defect.
pub(crate) fn exit_of(
    operation: Operation,
    status: &ExitStatus,
) -> Result<ExitCause, SandboxError> {
    let defect = || failed(operation, FailureReason::PlatformRejected);
    match status {
        ExitStatus::Code(code) => u8::try_from(*code)
            .map(|c| ExitCause::Code(ExitCode::from(c)))
            .map_err(|_| defect()),
        ExitStatus::Signal(name) => Ok(ExitCause::Signal(*name)),
        ExitStatus::UnnamedSignal(_) => Err(defect()),
        // The contract has no out-of-memory cause: the kernel's OOM killer
        // delivers SIGKILL, and that is what the contract reports.
        ExitStatus::OomKilled => Ok(ExitCause::Signal(SignalName::Sigkill)),
    }
}

/// A failure to start a command, decided from the typed error alone:
/// `SandboxInstanceNotFound` when the sandbox itself is gone
/// ([`BackendSandboxError::NotFound`], which the wire carries typed too);
/// `spawn_failed` for any other `not_found` or `invalid_input` (the program,
/// its working directory, the command: the sandbox answered, the command
/// could not start in it); the mapped backend error otherwise.
pub(crate) fn start_failure(
    operation: Operation,
    instance_id: &InstanceId,
    error: &BackendError,
) -> SandboxError {
    match error {
        BackendError::Sandbox(BackendSandboxError::NotFound { .. }) => {
            SandboxError::SandboxInstanceNotFound {
                instance_id: instance_id.clone(),
            }
        }
        e if matches!(e.code(), ErrorCode::NotFound | ErrorCode::InvalidInput) => {
            failed(operation, FailureReason::SpawnFailed)
        }
        _ => from_backend(operation, Subject::Instance(instance_id), error),
    }
}

fn interval(
    operation: Operation,
    start: Timestamp,
    end: Timestamp,
) -> Result<Interval, SandboxError> {
    Interval::new(start, end.max(start))
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ExecuteRequest,
) -> Result<SandboxExecutionResult, SandboxError> {
    let op = Operation::Execute;
    let located = adapter.locate(op, &request.instance_id).await?;
    op.check_state(located.record.state)?;
    let exec = exec_request(&request.command)
        .map_err(|e| start_failure(op, &request.instance_id, &e.into()))?;
    let mut capture = BoundedCapture::new(request.command.output_limit_bytes.get());
    let started = clock::now(op)?;
    let outcome = adapter
        .backend
        .exec(&located.sandbox_id, exec, &mut capture)
        .await;
    let (exit, interval) = match outcome {
        Ok(outcome) => {
            let start = clock::from_ms(op, outcome.started_at_ms)?;
            let end = clock::from_ms(op, outcome.finished_at_ms)?;
            (exit_of(op, &outcome.status)?, interval(op, start, end)?)
        }
        Err(e) if e.code() == ErrorCode::Timeout => {
            (ExitCause::TimedOut, interval(op, started, clock::now(op)?)?)
        }
        Err(e) => return Err(start_failure(op, &request.instance_id, &e)),
    };
    let (stdout, stderr) = capture.into_streams(op)?;
    Ok(SandboxExecutionResult {
        exit,
        interval,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::{ExecError, RequestError};

    /// Both are `not_found`; the typed error alone says which was missing,
    /// so nothing asks the backend again.
    #[test]
    fn a_start_failure_is_decided_from_the_typed_error() {
        let id = InstanceId::new("ci-1").unwrap();
        let op = Operation::Execute;
        let gone = BackendError::sandbox_not_found("sb-1");
        assert_eq!(
            start_failure(op, &id, &gone),
            SandboxError::SandboxInstanceNotFound {
                instance_id: id.clone()
            }
        );
        let spawn = failed(op, FailureReason::SpawnFailed);
        let cannot_start: [BackendError; 4] = [
            ExecError::ProgramNotFound {
                program: "nope".into(),
            }
            .into(),
            ExecError::CwdNotFound { cwd: "/no".into() }.into(),
            RequestError::EmptyProgram.into(),
            // A remote backend's answer that is not the sandbox's absence
            // (that one the wire carries typed).
            BackendError::relayed(ErrorCode::NotFound, "command not found: \"nope\""),
        ];
        for e in &cannot_start {
            assert_eq!(start_failure(op, &id, e), spawn, "{e}");
        }
        let dead: BackendError = BackendSandboxError::InitGone { id: "sb-1".into() }.into();
        assert_eq!(
            start_failure(op, &id, &dead),
            failed(op, FailureReason::PlatformUnavailable)
        );
    }

    #[test]
    fn capture_keeps_the_limit_and_marks_truncation() {
        let mut c = BoundedCapture::new(5);
        c.chunk(StreamKind::Stdout, b"abc");
        c.chunk(StreamKind::Stderr, b"12345");
        c.chunk(StreamKind::Stdout, b"defgh");
        c.chunk(StreamKind::Stdout, b"ij");
        let (out, err) = c.into_streams(Operation::Execute).unwrap();
        assert_eq!(&out.content[..], b"abcde");
        assert!(out.truncated);
        assert_eq!(&err.content[..], b"12345");
        assert!(!err.truncated);
    }

    /// The contract: "`wait` settles exactly once with an exit code (0–255)
    /// **xor** a signal name" — a code out of range, or a signal the
    /// contract cannot name (`ExitStatus::UnnamedSignal`), is refused.
    #[test]
    fn exits_are_codes_or_named_signals() {
        let op = Operation::Execute;
        assert_eq!(
            exit_of(op, &ExitStatus::Code(3)).unwrap(),
            ExitCause::Code(ExitCode::from(3))
        );
        assert_eq!(
            exit_of(op, &ExitStatus::Signal(SignalName::Sigkill)).unwrap(),
            ExitCause::Signal(SignalName::Sigkill)
        );
        assert!(exit_of(op, &ExitStatus::Code(-1)).is_err());
        assert!(exit_of(op, &ExitStatus::Code(256)).is_err());
        assert!(exit_of(op, &ExitStatus::UnnamedSignal(64)).is_err());
    }
}
