//! Every wire type has a JSON Schema, and validating newtypes carry their
//! pattern and limits in it.

use corral_contract::*;
use schemars::{JsonSchema, schema_for};

fn schema<T: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schema_for!(T)).unwrap()
}

#[test]
fn every_wire_type_has_a_schema() {
    let all = [
        schema::<SandboxProviderCapabilities>(),
        schema::<SandboxProvisionRequest>(),
        schema::<SandboxInstance>(),
        schema::<WriteFileRequest>(),
        schema::<ActiveWriteRequest>(),
        schema::<ExecuteRequest>(),
        schema::<SandboxExecutionResult>(),
        schema::<ReadFileRequest>(),
        schema::<ReadFileResult>(),
        schema::<ReadFilesRequest>(),
        schema::<ReadFilesResult>(),
        schema::<ListDirRequest>(),
        schema::<ListDirResult>(),
        schema::<ListProjectDirRequest>(),
        schema::<ListProjectDirResult>(),
        schema::<SnapshotRequest>(),
        schema::<SnapshotRef>(),
        schema::<CloneSnapshotRequest>(),
        schema::<ResumeRequest>(),
        schema::<ReleaseRequest>(),
        schema::<ReleaseDisposition>(),
        schema::<CleanupRequest>(),
        schema::<CleanupResult>(),
        schema::<OpenProcessRequest>(),
        schema::<SandboxProcessEvidence>(),
        schema::<ProcessExit>(),
        schema::<SandboxError>(),
        schema::<IdentityMismatch>(),
        schema::<ProtocolViolation>(),
        schema::<JournalState>(),
        schema::<ConformanceCase>(),
        schema::<CapabilityToken>(),
    ];
    for s in all {
        assert!(s.is_object());
    }
}

#[test]
fn validating_newtypes_carry_their_rules() {
    assert_eq!(schema::<Digest>()["pattern"], "^sha256:[0-9a-f]{64}$");
    assert_eq!(schema::<EnvKey>()["pattern"], "^[A-Za-z_][A-Za-z0-9_]*$");
    assert_eq!(schema::<Timestamp>()["pattern"], bounds::TIMESTAMP_PATTERN);
    assert_eq!(schema::<SandboxPath>()["maxLength"], 4096);
    assert_eq!(schema::<Arguments>()["maxItems"], 256);
    assert_eq!(schema::<Argument>()["maxLength"], 65_536);
    assert_eq!(schema::<OutputLimitBytes>()["maximum"], 16 * 1024 * 1024);
    assert_eq!(schema::<MaxMounts>()["maximum"], 64);
    assert_eq!(schema::<ExitCode>()["maximum"], 255);
    assert_eq!(schema::<InstanceId>()["pattern"], ID_PATTERN);
    assert_eq!(schema::<FileContent>()["contentEncoding"], "base64");
    let exit = schema::<ExitCause>();
    assert_eq!(exit["oneOf"].as_array().unwrap().len(), 3);
    let cmd = schema::<SandboxCommand>();
    assert_eq!(cmd["oneOf"].as_array().unwrap().len(), 2);
    let op = schema::<Operation>();
    let names = op["enum"].as_array().unwrap();
    assert!(names.contains(&serde_json::json!("provision_rollback")));
    assert!(names.contains(&serde_json::json!("instance_identity")));
    let req = schema::<Requirement>();
    assert_eq!(req["enum"].as_array().unwrap().len(), 11);
}
