//! The bounds table, on every request and every result.
//!
//! "Enforce these, and expect the Runner to enforce them again on your
//! results." The request side of the table is carried by the contract's
//! types (a request that breaks a bound cannot be built or decoded). The
//! result side is checked here, after every call that returns content, with
//! the contract's `validate_against` rules; a result over a bound is
//! `SandboxProtocolInvalid` naming the operation, the field and both values.
//!
//! "`execute` additionally refuses a `timeout_seconds` above the profile's
//! `max_duration_seconds` — that check happens in the Runner, so a command
//! reaching you is already inside the admitted envelope." That refusal is
//! `SandboxCapabilityUnavailable{requirement: resources}`: the command asks
//! for more time than the profile's resources admit.

use corral_contract::{
    ListDirRequest, ListDirResult, ListProjectDirRequest, ListProjectDirResult, Operation,
    ReadFileRequest, ReadFileResult, ReadFilesRequest, ReadFilesResult, Requirement,
    SandboxCommand, SandboxError, SandboxExecutionResult, SandboxProfile,
};

/// Refuses a command whose `timeout_seconds` exceeds the profile's
/// `max_duration_seconds`.
pub(crate) fn command(
    command: &SandboxCommand,
    profile: &SandboxProfile,
) -> Result<(), SandboxError> {
    if command.timeout_seconds.get() <= profile.max_duration_seconds.get() {
        Ok(())
    } else {
        Err(SandboxError::capability_unavailable(Requirement::Resources))
    }
}

/// `execute`: each stream within `output_limit_bytes`; a truncated stream
/// holds exactly that many bytes. (One exit cause and a monotonic interval
/// are guaranteed by the result's types.)
pub(crate) fn execution(
    command: &SandboxCommand,
    result: &SandboxExecutionResult,
) -> Result<(), SandboxError> {
    result
        .validate_against(command)
        .map_err(|v| v.into_error(Operation::Execute))
}

/// `readFile`: content within the caller's `maximum_bytes`.
pub(crate) fn read_file(
    request: &ReadFileRequest,
    result: &ReadFileResult,
) -> Result<(), SandboxError> {
    result
        .validate_against(request)
        .map_err(|v| v.into_error(Operation::ReadFile))
}

/// `readFiles`: the closed per-file union, in request order, one outcome per
/// member, within each member's and the group's budget. Any violation fails
/// the whole batch.
pub(crate) fn read_files(
    request: &ReadFilesRequest,
    result: &ReadFilesResult,
) -> Result<(), SandboxError> {
    result
        .validate_against(request)
        .map_err(|v| v.into_error(Operation::ReadFiles))
}

/// `listDir`: at most `max_entries`, strictly under the root, none twice.
pub(crate) fn list_dir(
    request: &ListDirRequest,
    result: &ListDirResult,
) -> Result<(), SandboxError> {
    result
        .validate_against(request)
        .map_err(|v| v.into_error(Operation::ListDir))
}

/// `listProjectDir`: `complete: true`, at most `max_entries`, strictly under
/// the root, none twice.
pub(crate) fn list_project_dir(
    request: &ListProjectDirRequest,
    result: &ListProjectDirResult,
) -> Result<(), SandboxError> {
    result
        .validate_against(request)
        .map_err(|v| v.into_error(Operation::ListProjectDir))
}
