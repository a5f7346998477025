//! `openProcess`: evidence checked before the handle is handed over, the
//! process destroyed on failure, the exit re-decoded when `wait` settles.
//!
//! "The Runner validates `evidence` against the instance and against your
//! own capability envelope before transferring the handle, then re-decodes
//! the exit when `wait` settles." … "streams that are not real
//! `WritableStream`/`ReadableStream`, or evidence disagreeing with the
//! instance, fail `open_process_identity`; the Runner then destroys the
//! process under a 30 s bound and combines both causes."
//!
//! A returned process must hand over all three streams (`input`, `output`,
//! `error`) at once; a stream it cannot produce is not a real stream. The
//! runtime takes them and hands the caller a [`CheckedProcess`] that serves
//! them, and whose `wait` decodes the exit again from its wire form
//! (an exit code 0–255 **xor** a signal name) and holds the provider to
//! "settles exactly once … and must be re-readable": a later `wait` that
//! reports a different exit than the first is `SandboxProtocolInvalid`.

use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;

use corral_contract::{
    BoxFuture, ByteSink, ByteSource, Compensated, ControlSignal, LiveProcess, Operation,
    ProcessExit, ProtocolViolation, SandboxError, SandboxInstance, SandboxProcessEvidence,
    SandboxProcessRequest, SandboxProviderCapabilities, evidence_mismatches,
};

use super::handoff::{combine, run_bounded};

/// A live process the runtime accepted.
pub(crate) struct CheckedProcess {
    inner: Box<dyn LiveProcess>,
    input: Option<Pin<Box<dyn ByteSink>>>,
    output: Option<Pin<Box<dyn ByteSource>>>,
    error: Option<Pin<Box<dyn ByteSource>>>,
    settled: OnceLock<ProcessExit>,
}

fn identity_violation(field: &str, expected: &str, actual: &str) -> SandboxError {
    ProtocolViolation::new(field, expected, actual).into_error(Operation::OpenProcessIdentity)
}

/// Checks a process the provider opened and hands it over, or destroys it
/// under `bound` and fails with both causes.
pub(crate) async fn accept(
    mut process: Box<dyn LiveProcess>,
    request: &SandboxProcessRequest,
    instance: &SandboxInstance,
    capabilities: &SandboxProviderCapabilities,
    bound: Duration,
) -> Result<CheckedProcess, SandboxError> {
    let input = process.take_input();
    let output = process.take_output();
    let error = process.take_error();
    let evidence = evidence_mismatches(request, instance, capabilities, process.evidence());
    let failure = if let Some(mismatch) = evidence.first() {
        Some(
            mismatch
                .to_violation()
                .into_error(Operation::OpenProcessIdentity),
        )
    } else {
        [
            ("input", input.is_none()),
            ("output", output.is_none()),
            ("error", error.is_none()),
        ]
        .into_iter()
        .find(|(_, missing)| *missing)
        .map(|(stream, _)| identity_violation(stream, "a live stream", "none"))
    };
    match failure {
        None => Ok(CheckedProcess {
            inner: process,
            input,
            output,
            error,
            settled: OnceLock::new(),
        }),
        Some(cause) => {
            drop((input, output, error));
            let destroy = Box::pin(async move { process.destroy().await });
            let settled = run_bounded(destroy, bound).await;
            Err(combine(Compensated::OpenProcess, settled, cause))
        }
    }
}

/// The exit decoded again from its wire form.
fn redecode(exit: ProcessExit) -> Result<ProcessExit, SandboxError> {
    let wire = serde_json::to_value(exit).map_err(|e| {
        ProtocolViolation::new("exit", "an exit code xor a signal name", e.to_string())
            .into_error(Operation::OpenProcess)
    })?;
    serde_json::from_value(wire.clone()).map_err(|_| {
        ProtocolViolation::new(
            "exit",
            "an exit code 0-255 xor a signal name",
            wire.to_string(),
        )
        .into_error(Operation::OpenProcess)
    })
}

fn rendered(exit: &ProcessExit) -> String {
    serde_json::to_string(exit).unwrap_or_else(|e| format!("<unrenderable: {e}>"))
}

impl CheckedProcess {
    async fn checked_wait(&self) -> Result<ProcessExit, SandboxError> {
        let exit = redecode(self.inner.wait().await?)?;
        let first = *self.settled.get_or_init(|| exit);
        if first == exit {
            Ok(exit)
        } else {
            Err(
                ProtocolViolation::new("exit", rendered(&first), rendered(&exit))
                    .into_error(Operation::OpenProcess),
            )
        }
    }
}

impl LiveProcess for CheckedProcess {
    fn evidence(&self) -> &SandboxProcessEvidence {
        self.inner.evidence()
    }

    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>> {
        self.input.take()
    }

    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.output.take()
    }

    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.error.take()
    }

    /// The provider's `wait`, re-decoded and held to the first settlement.
    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        Box::pin(self.checked_wait())
    }

    fn signal(&self, signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.inner.signal(signal)
    }

    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.inner.destroy()
    }
}
