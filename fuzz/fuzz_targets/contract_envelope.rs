//! The contract's decoders (`corral-contract`): the capability envelope,
//! the contract error, every result a provider returns over the wire (the
//! wire client decodes each from a server it does not trust), the request
//! envelopes, the live process's evidence and exit, and the validated
//! values they are made of (timestamps, digests, image references, sandbox
//! paths, host ports).
//!
//! The first byte chooses the type, the rest is its JSON.
//!
//! Invariants: a decoder answers a value or a refusal, never a panic; a
//! decoded value encodes to JSON that decodes to an equal value (a value is
//! validated once, where it is made, so its own encoding must pass again);
//! a decoded capability envelope passes `SandboxProviderCapabilities::new`
//! too (decoding admits nothing the constructor refuses) and yields a
//! conformance plan whose cases each run with the tokens the envelope
//! earns, or name what is missing.

#![no_main]

use std::fmt::Debug;

use corral_contract::{
    ActiveWriteRequest, CleanupRequest, CleanupResult, CloneSnapshotRequest, Digest,
    ExecuteRequest, HostPort, ImageReference, ListDirRequest, ListDirResult, ListProjectDirRequest,
    ListProjectDirResult, NetworkPolicy, OpenProcessRequest, ProcessExit, ReadFileRequest,
    ReadFileResult, ReadFilesRequest, ReadFilesResult, ReleaseDisposition, ReleaseRequest,
    ResumeRequest, SandboxError, SandboxExecutionResult, SandboxInstance, SandboxPath,
    SandboxProcessEvidence, SandboxProviderCapabilities, SandboxProvisionRequest, SnapshotRef,
    SnapshotRequest, Timestamp, WriteFileRequest,
};
use corral_wire::protocol::{HandoffReply, TransactionReply};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Decodes `json` as `T`; a value must survive its own encoding.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(json: &[u8]) -> Option<T> {
    let value = serde_json::from_slice::<T>(json).ok()?;
    let encoded = serde_json::to_vec(&value).expect("a decoded value encodes");
    match serde_json::from_slice::<T>(&encoded) {
        Ok(again) => assert_eq!(again, value, "{} changes in its own encoding", name::<T>()),
        Err(e) => panic!(
            "{} encodes to JSON it refuses: {e}: {}",
            name::<T>(),
            String::from_utf8_lossy(&encoded)
        ),
    }
    Some(value)
}

fn name<T>() -> &'static str {
    std::any::type_name::<T>()
}

fn decode<T: Serialize + DeserializeOwned + PartialEq + Debug>(json: &[u8]) {
    round_trip::<T>(json);
}

/// The envelope: decoded, it is a declaration the constructor accepts, and
/// its conformance plan is consistent with the tokens it earns.
fn capabilities(json: &[u8]) {
    let Some(caps) = round_trip::<SandboxProviderCapabilities>(json) else {
        return;
    };
    let rebuilt = SandboxProviderCapabilities::new(caps.declaration().clone());
    assert_eq!(
        rebuilt.as_ref(),
        Ok(&caps),
        "decoding admitted what new refuses"
    );
    let earned = caps.conformance_tokens();
    for (case, missing) in caps.conformance_plan() {
        assert_eq!(case.runs_with(&earned), missing.is_empty(), "{case:?}");
        assert_eq!(case.missing_tokens(&earned), missing, "{case:?}");
    }
}

/// Every decoder, by the first byte of the input.
const DECODERS: &[fn(&[u8])] = &[
    capabilities,
    decode::<SandboxError>,
    decode::<HandoffReply<SandboxInstance>>,
    decode::<HandoffReply<SnapshotRef>>,
    decode::<HandoffReply<ReleaseDisposition>>,
    decode::<TransactionReply>,
    decode::<SandboxExecutionResult>,
    decode::<ReadFileResult>,
    decode::<ReadFilesResult>,
    decode::<ListDirResult>,
    decode::<ListProjectDirResult>,
    decode::<CleanupResult>,
    decode::<SandboxProcessEvidence>,
    decode::<ProcessExit>,
    decode::<SandboxProvisionRequest>,
    decode::<WriteFileRequest>,
    decode::<ActiveWriteRequest>,
    decode::<ExecuteRequest>,
    decode::<ReadFileRequest>,
    decode::<ReadFilesRequest>,
    decode::<ListDirRequest>,
    decode::<ListProjectDirRequest>,
    decode::<SnapshotRequest>,
    decode::<CloneSnapshotRequest>,
    decode::<ReleaseRequest>,
    decode::<ResumeRequest>,
    decode::<CleanupRequest>,
    decode::<OpenProcessRequest>,
    decode::<NetworkPolicy>,
    decode::<Timestamp>,
    decode::<Digest>,
    decode::<ImageReference>,
    decode::<SandboxPath>,
    decode::<HostPort>,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, json)) = data.split_first() else {
        return;
    };
    DECODERS[usize::from(selector) % DECODERS.len()](json);
});
