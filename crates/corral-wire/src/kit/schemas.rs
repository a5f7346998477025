//! JSON Schemas generated from the Rust types: the capabilities envelope,
//! every request and result of the unary routes, the reply wrappers of the
//! handoff and active-write routes and their tickets, the contract errors
//! and the `openProcess` control frames.

use corral_contract::*;
use schemars::{JsonSchema, Schema, schema_for};

use crate::protocol::{
    Frame, HandoffReply, HandoffTicket, InstanceBody, SnapshotBody, TransactionReply,
    TransactionTicket,
};

fn named<T: JsonSchema>(name: &'static str) -> (&'static str, Schema) {
    (name, schema_for!(T))
}

/// Every schema, by the file stem it is written under.
pub(super) fn schemas() -> Vec<(&'static str, Schema)> {
    vec![
        named::<SandboxProviderCapabilities>("SandboxProviderCapabilities"),
        named::<SandboxProvisionRequest>("SandboxProvisionRequest"),
        named::<WriteFileRequest>("WriteFileRequest"),
        named::<ActiveWriteRequest>("ActiveWriteRequest"),
        named::<InstanceBody>("InstanceBody"),
        named::<SnapshotBody>("SnapshotBody"),
        named::<ExecuteRequest>("ExecuteRequest"),
        named::<ReadFileRequest>("ReadFileRequest"),
        named::<ReadFilesRequest>("ReadFilesRequest"),
        named::<ListDirRequest>("ListDirRequest"),
        named::<ListProjectDirRequest>("ListProjectDirRequest"),
        named::<SnapshotRequest>("SnapshotRequest"),
        named::<CloneSnapshotRequest>("CloneSnapshotRequest"),
        named::<ReleaseRequest>("ReleaseRequest"),
        named::<ResumeRequest>("ResumeRequest"),
        named::<CleanupRequest>("CleanupRequest"),
        named::<OpenProcessRequest>("OpenProcessRequest"),
        named::<SandboxInstance>("SandboxInstance"),
        named::<SandboxExecutionResult>("SandboxExecutionResult"),
        named::<ReadFileResult>("ReadFileResult"),
        named::<ReadFilesResult>("ReadFilesResult"),
        named::<ListDirResult>("ListDirResult"),
        named::<ListProjectDirResult>("ListProjectDirResult"),
        named::<SnapshotRef>("SnapshotRef"),
        named::<ReleaseDisposition>("ReleaseDisposition"),
        named::<CleanupResult>("CleanupResult"),
        named::<HandoffReply<SandboxInstance>>("HandoffReply_SandboxInstance"),
        named::<HandoffReply<SnapshotRef>>("HandoffReply_SnapshotRef"),
        named::<HandoffReply<ReleaseDisposition>>("HandoffReply_ReleaseDisposition"),
        named::<HandoffTicket>("HandoffTicket"),
        named::<TransactionReply>("TransactionReply"),
        named::<TransactionTicket>("TransactionTicket"),
        named::<SandboxProcessEvidence>("SandboxProcessEvidence"),
        named::<SandboxError>("SandboxError"),
        named::<Frame>("Frame"),
    ]
}
