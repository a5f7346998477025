//! `openProcess`: a live process with streaming stdio.
//!
//! The streams are abstract and runtime-free: [`ByteSink`] and [`ByteSource`]
//! are poll-based on `core::task`, so a tokio (or any) adapter can wrap them.

use std::pin::Pin;
use std::task::{Context, Poll};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::Placement;
use crate::handoff::BoxFuture;
use crate::identity::{Checks, Mismatch};
use crate::macros::vocabulary;
use crate::{
    Arguments, ControlSignal, Environment, Executable, InstanceId, ProcessExit, ProcessId,
    ProviderId, SandboxError, SandboxInstance, SandboxPath, SandboxProviderCapabilities, Timestamp,
};

/// What to start. Deliberately smaller than `execute`'s command: "no
/// `stdin`, no `timeout_seconds`, and no `output_limit_bytes`" — those keys
/// are refused at decode. Stdin arrives on the input stream; the lifetime is
/// bounded by the instance's expiry and the Run; output is bounded by the
/// consuming driver, never by the provider.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxProcessRequest {
    /// The program.
    pub executable: Executable,
    /// Its arguments (≤ 256, each ≤ 65,536 bytes, no NUL), after the program.
    #[serde(default)]
    pub arguments: Arguments,
    /// Where it starts; `None` is the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<SandboxPath>,
    /// Extra environment variables.
    #[serde(default)]
    pub environment: Environment,
}

/// `openProcess`: start one long-lived process in an active instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenProcessRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The process.
    pub process: SandboxProcessRequest,
}

/// Trusted provider evidence about a started process — "workload output can
/// never author it". The Runner checks it against the instance, the request
/// and the provider's envelope before taking the handle.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxProcessEvidence {
    /// The instance it runs in.
    pub instance_id: InstanceId,
    /// The provider running it.
    pub provider: ProviderId,
    /// The placement.
    pub placement: Placement,
    /// The provider's identifier of the process.
    pub process_id: ProcessId,
    /// When it started.
    pub started_at: Timestamp,
    /// The program started.
    pub executable: Executable,
    /// The arguments it got.
    pub arguments: Arguments,
    /// Where it started, if requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<SandboxPath>,
}

vocabulary! {
    /// A field of the `openProcess` evidence cross-check.
    pub enum EvidenceField: "evidence field" {
        /// The provider's envelope must advertise `open_process`.
        OpenProcessCapability = "capabilities.open_process",
        /// `instance_id`.
        InstanceId = "instance_id",
        /// `provider`.
        Provider = "provider",
        /// `placement`.
        Placement = "placement",
        /// `started_at` (before the instance's expiry).
        StartedAt = "started_at",
        /// `executable`.
        Executable = "executable",
        /// `arguments`.
        Arguments = "arguments",
        /// `working_directory`.
        WorkingDirectory = "working_directory",
    }
}

/// A failed evidence check.
pub type EvidenceMismatch = Mismatch<EvidenceField>;

/// The `open_process_identity` checks: the envelope advertises
/// `open_process`; the evidence names the instance, its provider and
/// placement; it started strictly before the instance's expiry; and it
/// started exactly the requested executable, arguments and working
/// directory.
pub fn evidence_mismatches(
    request: &SandboxProcessRequest,
    instance: &SandboxInstance,
    capabilities: &SandboxProviderCapabilities,
    evidence: &SandboxProcessEvidence,
) -> Vec<EvidenceMismatch> {
    use EvidenceField as F;
    let mut c = Checks::new();
    c.eq(F::OpenProcessCapability, &true, &capabilities.open_process);
    c.eq(F::InstanceId, &instance.instance_id, &evidence.instance_id);
    c.eq(F::Provider, &instance.provider, &evidence.provider);
    c.eq(F::Placement, &instance.placement, &evidence.placement);
    if evidence.started_at >= instance.expires_at {
        c.fail(
            F::StartedAt,
            format!("before {}", instance.expires_at),
            evidence.started_at.to_string(),
        );
    }
    c.eq(F::Executable, &request.executable, &evidence.executable);
    c.eq(F::Arguments, &request.arguments, &evidence.arguments);
    c.eq(
        F::WorkingDirectory,
        &request.working_directory,
        &evidence.working_directory,
    );
    c.0
}

/// A writable byte stream with a half-close (the process's input).
///
/// Ordered bytes; `poll_close` delivers EOF to the child while the outputs
/// stay open. Object safe; errors are [`SandboxError`]s (typically
/// `SandboxOperationFailed{open_process, stream_closed}`).
pub trait ByteSink: Send + Sync {
    /// Writes some of `buf`, returning how many bytes were accepted (the
    /// backpressure point).
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, SandboxError>>;

    /// Flushes accepted bytes toward the process.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>>;

    /// Flushes and half-closes: the process observes EOF.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>>;
}

/// A readable byte stream with a real EOF (the process's output or error).
///
/// Chunk boundaries carry no meaning; re-chunk freely.
pub trait ByteSource: Send + Sync {
    /// Reads into `buf`, returning the count; `Ok(0)` for a non-empty `buf`
    /// is EOF.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>>;
}

/// A live process, as `openProcess` returns it.
///
/// The streams are taken once each (so they can move into separate tasks
/// while the handle stays for `wait`, `signal` and `destroy`):
/// - `input`: ordered bytes and a half-close;
/// - `output`: ordered, lossless, no duplicates, a real EOF;
/// - `error`: diagnostic only — bounded, best effort, unordered relative to
///   `output`.
///
/// `wait` settles exactly once with an exit code xor a signal and is
/// re-readable (every call after settlement yields the same exit);
/// `signal` delivers one control signal; `destroy` is idempotent and either
/// interruptible or internally bounded. At most one live process per
/// instance: a second open is refused by the provider as
/// `SandboxLifecycleConflict{open_process, process_already_open}`.
pub trait LiveProcess: Send + Sync {
    /// The trusted evidence about this process.
    fn evidence(&self) -> &SandboxProcessEvidence;

    /// Takes the input stream (`None` once taken).
    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>>;

    /// Takes the output stream (`None` once taken).
    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>>;

    /// Takes the diagnostic error stream (`None` once taken).
    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>>;

    /// Waits for the exit; re-readable.
    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>>;

    /// Delivers one control signal.
    fn signal(&self, signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>>;

    /// Tears the process down; idempotent.
    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>>;
}
