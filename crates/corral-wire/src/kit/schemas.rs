//! JSON Schemas generated from the Rust types: the capabilities envelope,
//! every request and result of the unary routes, the reply wrappers of the
//! handoff and active-write routes and their tickets, the contract errors
//! and the `openProcess` control frames.

use corral_contract::*;
use schemars::{JsonSchema, Schema, schema_for};
use serde_json::Value;

use crate::protocol::{
    Frame, HandoffReply, HandoffTicket, InstanceBody, SnapshotBody, TransactionReply,
    TransactionTicket,
};

fn named<T: JsonSchema>(name: &'static str) -> (&'static str, Schema) {
    let mut schema = schema_for!(T);
    if let Some(map) = schema.as_object_mut() {
        unlink_members(map);
    }
    (name, schema)
}

/// Rewrites the Rust doc links the descriptions carry from the doc
/// comments (``[`super::HANDOFF_WINDOW_SECONDS`]``) as plain names
/// (`` `HANDOFF_WINDOW_SECONDS` ``): a reader of the schema has no Rust
/// modules to follow.
fn unlink(value: &mut Value) {
    match value {
        Value::Object(map) => unlink_members(map),
        Value::Array(items) => items.iter_mut().for_each(unlink),
        _ => {}
    }
}

fn unlink_members(map: &mut serde_json::Map<String, Value>) {
    for (key, member) in map.iter_mut() {
        match member {
            Value::String(text) if key == "description" => *text = plain_links(text),
            other => unlink(other),
        }
    }
}

fn plain_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start + 2..].find("`]") else {
            break;
        };
        let path = &rest[start + 2..start + 2 + len];
        // Module paths go (`super::`, `crate::`); a type's own path stays
        // (`EnforcementAxis::CpuLimit`).
        let segments: Vec<&str> = path.split("::").collect();
        let first = segments
            .iter()
            .position(|s| s.starts_with(|c: char| c.is_ascii_uppercase()))
            .unwrap_or(segments.len().saturating_sub(1));
        let name = segments[first..].join("::");
        out.push_str(&rest[..start]);
        out.push('`');
        out.push_str(&name);
        out.push('`');
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_links_become_plain_names() {
        assert_eq!(
            plain_links("or [`super::HANDOFF_WINDOW_SECONDS`] pass, see [`Frame`]."),
            "or `HANDOFF_WINDOW_SECONDS` pass, see `Frame`."
        );
        assert_eq!(
            plain_links("See [`EnforcementAxis::CpuLimit`] and [`crate::identity_mismatches`]."),
            "See `EnforcementAxis::CpuLimit` and `identity_mismatches`."
        );
        assert_eq!(plain_links("a [`dangling"), "a [`dangling");
        for (name, schema) in schemas() {
            let text = serde_json::to_string(schema.as_value()).unwrap();
            assert!(!text.contains("[`"), "{name} keeps a doc link");
        }
    }
}
