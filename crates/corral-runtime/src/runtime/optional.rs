//! Optional capabilities: absent versus wrong.
//!
//! "Every optional capability defaults to the weakest legal value, and the
//! runtime fails closed on a missing member rather than substituting a
//! permissive one." The runtime reads presence from the envelope, never by
//! trying the member:
//!
//! - `listDir`, `listProjectDir`, `openProcess` and `beginActiveWrite` the
//!   envelope does not declare are refused at call time with the member's
//!   typed refusal ([`Operation::absent_refusal`]), without calling the
//!   provider;
//! - `readFile` without `physically_contained_file_read` "fails closed on
//!   `physically_contained_file_read`" — the runtime refuses it before the
//!   provider could return bytes it cannot have contained;
//! - `readFiles` absent: "the Runtime falls back to sequential `readFile`
//!   per member. Identical results, more round trips." Each `readFile`
//!   outcome is mapped onto the closed per-file union (`ok`, `missing` for
//!   `not_found`, `too_large`, `refused` for `outside_root`,
//!   `not_regular_file`, `symlink_loop`, `permission_denied`); any other
//!   failure fails the batch;
//! - "Roots are separate trust domains in a batch. `readFiles` requests are
//!   grouped by `allowed_root` and each group is called separately with its
//!   own aggregate budget. A batch spanning three mounts is three calls,
//!   never one." A group larger than one request's bounds (1,024 files,
//!   128 MiB) is split into several calls, and a path requested twice is
//!   read in a separate call, so every call is a well-formed request.
//!
//! Whether native or fallen back, each call's result is held to the
//! `readFiles` rules: "out-of-order, short, or over-budget results fail the
//! **whole batch** as `SandboxProtocolInvalid`".

use corral_contract::{
    FailureReason, FileSize, InstanceId, MaximumBytes, Operation, ProtocolViolation,
    ReadFileOutcome, ReadFileRequest, ReadFileResult, ReadFilesMember, ReadFilesRequest,
    ReadFilesResult, ReadRefusal, Requirement, SandboxError, SandboxPath, SandboxProvider,
    SandboxProviderCapabilities, bounds::MAX_READ_FILES_AGGREGATE_BYTES,
    bounds::MAX_READ_FILES_PER_REQUEST,
};

use super::bounds;

/// Refuses a call to an optional member the envelope does not declare, with
/// the member's typed refusal. (The runtime never asks this of `readFiles`,
/// which it serves by falling back; a narrowed provider does.)
pub(crate) fn declared(
    operation: Operation,
    capabilities: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    let declared = match operation {
        Operation::ReadFiles => capabilities.read_files,
        Operation::ListDir => capabilities.list_dir,
        Operation::ListProjectDir => capabilities.list_project_dir,
        Operation::OpenProcess => capabilities.open_process,
        Operation::BeginActiveWrite => capabilities.active_mount_write,
        _ => true,
    };
    match (declared, operation.absent_refusal()) {
        (false, Some(refusal)) => Err(refusal),
        _ => Ok(()),
    }
}

/// Refuses a read on a provider that cannot contain it physically.
pub(crate) fn contained_read(
    capabilities: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    if capabilities.physically_contained_file_read {
        Ok(())
    } else {
        Err(SandboxError::capability_unavailable(
            Requirement::PhysicallyContainedFileRead,
        ))
    }
}

/// A batch member with the root the runtime derived for it and its place in
/// the caller's order.
pub(crate) struct Rooted {
    /// Its position in the caller's batch.
    pub(crate) index: usize,
    /// Its derived `allowed_root`.
    pub(crate) root: SandboxPath,
    /// The member.
    pub(crate) member: ReadFilesMember,
}

/// The members of one provider call.
pub(crate) struct Chunk {
    root: SandboxPath,
    members: Vec<(usize, ReadFilesMember)>,
    budget: u64,
}

impl Chunk {
    fn fits(&self, member: &ReadFilesMember) -> bool {
        self.members.len() < MAX_READ_FILES_PER_REQUEST
            && self.budget + member.maximum_bytes.get() <= MAX_READ_FILES_AGGREGATE_BYTES
            && !self.members.iter().any(|(_, m)| m.path == member.path)
    }
}

/// Groups a batch by root (in order of first appearance), splitting a group
/// where one request's bounds or a repeated path require it.
pub(crate) fn chunks(batch: Vec<Rooted>) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = Vec::new();
    for rooted in batch {
        let open = chunks
            .iter_mut()
            .rfind(|chunk| chunk.root == rooted.root)
            .filter(|chunk| chunk.fits(&rooted.member));
        match open {
            Some(chunk) => {
                chunk.budget += rooted.member.maximum_bytes.get();
                chunk.members.push((rooted.index, rooted.member));
            }
            None => chunks.push(Chunk {
                root: rooted.root,
                budget: rooted.member.maximum_bytes.get(),
                members: vec![(rooted.index, rooted.member)],
            }),
        }
    }
    chunks
}

impl Chunk {
    /// The request this chunk is, and the caller positions of its members.
    pub(crate) fn into_request(
        self,
        instance_id: &InstanceId,
    ) -> Result<(ReadFilesRequest, Vec<usize>), SandboxError> {
        let (indexes, members): (Vec<usize>, Vec<ReadFilesMember>) =
            self.members.into_iter().unzip();
        let request =
            ReadFilesRequest::new(instance_id.clone(), self.root, members).map_err(|invalid| {
                ProtocolViolation::new(
                    invalid.field(),
                    invalid.broken_rule(),
                    invalid.shown_value().unwrap_or("the batch"),
                )
                .into_error(Operation::ReadFiles)
            })?;
        Ok((request, indexes))
    }
}

/// Reads one group: natively when the envelope declares `read_files`,
/// otherwise member by member through `readFile`; either way the result is
/// held to the `readFiles` rules.
pub(crate) async fn read_group<P: SandboxProvider>(
    provider: &P,
    capabilities: &SandboxProviderCapabilities,
    request: &ReadFilesRequest,
) -> Result<ReadFilesResult, SandboxError> {
    let result = if capabilities.read_files {
        provider.read_files(request.clone()).await?
    } else {
        sequential(provider, request).await?
    };
    bounds::read_files(request, &result)?;
    Ok(result)
}

/// The fallback: one `readFile` per member, in order.
async fn sequential<P: SandboxProvider>(
    provider: &P,
    request: &ReadFilesRequest,
) -> Result<ReadFilesResult, SandboxError> {
    let mut files = Vec::with_capacity(request.files().len());
    for member in request.files() {
        let single = ReadFileRequest::new(
            request.instance_id().clone(),
            member.path.clone(),
            request.allowed_root().clone(),
            member.maximum_bytes,
        )
        .map_err(|invalid| {
            ProtocolViolation::new(invalid.field(), invalid.broken_rule(), member.path.as_str())
                .into_error(Operation::ReadFiles)
        })?;
        let read = provider.read_file(single.clone()).await;
        if let Ok(result) = &read {
            bounds::read_file(&single, result)?;
        }
        files.push(outcome(member, read)?);
    }
    Ok(ReadFilesResult { files })
}

fn malformed(field: &str, expected: &str, actual: u64) -> SandboxError {
    ProtocolViolation::new(field, expected, actual.to_string()).into_error(Operation::ReadFile)
}

/// One `readFile` outcome as a member of the closed per-file union.
fn outcome(
    member: &ReadFilesMember,
    read: Result<ReadFileResult, SandboxError>,
) -> Result<ReadFileOutcome, SandboxError> {
    let path = member.path.clone();
    let refused = |reason| {
        Ok(ReadFileOutcome::Refused {
            path: path.clone(),
            reason,
        })
    };
    match read {
        Ok(ReadFileResult { content }) => Ok(ReadFileOutcome::Ok {
            size: FileSize::of_len(content.len()),
            path,
            content,
        }),
        Err(SandboxError::SandboxFileTooLarge { limit, actual, .. }) => {
            let size = FileSize::new(actual)
                .map_err(|_| malformed("actual", "a JSON-safe file size", actual))?;
            let limit = MaximumBytes::new(limit)
                .map_err(|_| malformed("limit", "a readFile maximum_bytes", limit))?;
            Ok(ReadFileOutcome::TooLarge { path, size, limit })
        }
        Err(SandboxError::SandboxOperationFailed {
            reason,
            cause,
            operation,
        }) => match reason {
            FailureReason::NotFound => Ok(ReadFileOutcome::Missing { path }),
            FailureReason::OutsideRoot => refused(ReadRefusal::OutsideRoot),
            FailureReason::NotRegularFile => refused(ReadRefusal::NotRegularFile),
            FailureReason::SymlinkLoop => refused(ReadRefusal::SymlinkLoop),
            FailureReason::PermissionDenied => refused(ReadRefusal::PermissionDenied),
            _ => Err(SandboxError::SandboxOperationFailed {
                operation,
                reason,
                cause,
            }),
        },
        Err(other) => Err(other),
    }
}
