//! The corral provider contract: pure types, no I/O.
//!
//! This crate is the seam every sandbox provider is held to: the capability
//! envelope ([`SandboxProviderCapabilities`]), the requests and results of
//! each member, the instance and snapshot identity and their cross-checks,
//! the lifecycle states, the bounds, canonical digests and timestamps, the
//! closed error vocabulary ([`SandboxError`]) and the [`SandboxProvider`]
//! trait itself.
//!
//! Every value is validated where it is made: validating constructors
//! (`new`, `TryFrom`, `FromStr`) and `serde` decoding refuse a malformed
//! value with an [`InvalidValue`] naming the field and the rule. Every wire
//! type derives or implements `schemars::JsonSchema`.
//!
//! ```
//! use corral_contract::{CapabilityToken, Digest, SandboxProviderCapabilities, Timestamp};
//!
//! // Canonical timestamps round-trip byte-identically; other spellings are refused.
//! let t = Timestamp::parse("2026-11-29T19:27:50.000Z")?;
//! assert_eq!(t.to_string(), "2026-11-29T19:27:50.000Z");
//! assert!(Timestamp::parse("2026-11-29T19:27:50Z").is_err());
//!
//! // Refusals name the field and the rule.
//! let err = Digest::new("sha256:zz").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     r#"digest: "sha256:zz" does not match ^sha256:[0-9a-f]{64}$"#
//! );
//!
//! // The contract's minimum provider earns no `filesystem` token.
//! let min = SandboxProviderCapabilities::minimum();
//! assert!(!min.conformance_tokens().contains(&CapabilityToken::Filesystem));
//! # Ok::<(), corral_contract::InvalidValue>(())
//! ```
//!
//! The crate performs no I/O and depends on no async runtime. The rules
//! it enforces, where, and the tests that prove them are listed in the
//! repository's `docs/contract.md`.

mod macros;

mod active_write;
mod args;
pub mod bounds;
mod capabilities;
mod cleanup;
mod command;
mod digest;
mod env;
mod error;
mod execution;
mod handoff;
mod identity;
mod ids;
mod image;
mod instance;
mod invalid;
mod lifecycle;
mod limits;
mod list;
mod mounts;
mod network;
mod octets;
mod operation;
mod path;
mod process;
mod profile;
mod provider;
mod provision;
mod read;
mod release;
mod signal;
mod snapshot;
mod timestamp;
mod write;

pub use active_write::{
    ActiveWriteBatch, ActiveWriteFile, ActiveWriteRequest, ActiveWriteTransaction, DispatchMarker,
    JournalState,
};
pub use args::{Argument, Arguments, Argv, Executable, ShellScript};
pub use capabilities::{
    Architecture, CapabilityDeclaration, CapabilityField, CapabilityToken, ConformanceCase,
    EgressCertification, Enforcement, EnforcementAxis, EnforcementLevel, ImageMode, NetworkMode,
    OperatingSystem, PackageManager, Placement, Platform, RetentionMode,
    SandboxProviderCapabilities, SnapshotCustody, Tier,
};
pub use cleanup::{CleanupRequest, CleanupResult};
pub use command::{CommandLine, ExecuteRequest, SandboxCommand};
pub use digest::Digest;
pub use env::{EnvKey, Environment};
pub use error::{
    AdapterRejection, ConflictState, ErrorKind, FailureReason, OutputStream, ProtocolViolation,
    Requirement, SandboxError,
};
pub use execution::{Interval, SandboxExecutionResult, StreamCapture};
pub use handoff::{BoxFuture, Handoff, NoRollback, Rollback};
pub use identity::{
    IdentityField, IdentityMismatch, Mismatch, check_instance_identity, identity_mismatches,
};
pub use ids::{
    AttemptId, ID_PATTERN, InstanceId, LeaseId, PackageName, PackageVersion, ProcessId, ProfileId,
    ProfileVersion, ProviderId, Revision, RunId, SessionId, SnapshotId, TargetId, TransactionId,
    WorkspaceId,
};
pub use image::ImageReference;
pub use instance::{Materialization, SandboxInstance};
pub use invalid::InvalidValue;
pub use lifecycle::InstanceState;
pub use limits::{
    AggregateBudgetBytes, DurationSeconds, FileMode, FileSize, LeaseEpoch, MaxEntries, MaxMounts,
    MaximumBytes, OutputLimitBytes, TimeoutSeconds,
};
pub use list::{
    ListDirEntry, ListDirRequest, ListDirResult, ListProjectDirRequest, ListProjectDirResult,
    ProjectEntry,
};
pub use mounts::{MountAccess, MountPlanRefusal, MountSpec, Mounts, check_mount_plan};
pub use network::{Destinations, HostPort, NetworkPolicy, valid_dns_name};
pub use octets::{
    BASE64_PATTERN, FileContent, Octets, OutputBytes, StdinBytes, base64_decode, base64_encode,
};
pub use operation::{Compensated, HandoffMember, Operation};
pub use path::{SANDBOX_PATH_PATTERN, SandboxPath};
pub use process::{
    ByteSink, ByteSource, EvidenceField, EvidenceMismatch, LiveProcess, OpenProcessRequest,
    SandboxProcessEvidence, SandboxProcessRequest, evidence_mismatches,
};
pub use profile::{
    CpuMillicores, DiskBytes, MemoryBytes, PackageSpec, ProcessCount, ResourceLimits,
    SandboxProfile,
};
pub use provider::SandboxProvider;
pub use provision::SandboxProvisionRequest;
pub use read::{
    ReadFileOutcome, ReadFileRequest, ReadFileResult, ReadFilesMember, ReadFilesRequest,
    ReadFilesResult, ReadRefusal,
};
pub use release::{ReleaseDisposition, ReleaseRequest};
pub use signal::{ControlSignal, ExitCause, ExitCode, ProcessExit, SignalName};
pub use snapshot::{
    CloneSnapshotRequest, ResumeRequest, SnapshotField, SnapshotMismatch, SnapshotRef,
    SnapshotRequest, clone_mismatches, resume_mismatches, snapshot_mismatches,
};
pub use timestamp::Timestamp;
pub use write::{WriteFileRequest, write_admitted};
