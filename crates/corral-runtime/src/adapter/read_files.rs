//! `readFiles`: a native batch of contained reads under one `allowed_root`.
//!
//! Declared only when the envelope says `read_files` (which requires
//! physically contained reads); otherwise the member answers the contract's
//! absent refusal, `SandboxLifecycleConflict{read_files,
//! read_files_unsupported}`, and the Runner falls back to `readFile`.
//!
//! Members are read in request order, each with its own `maximum_bytes`,
//! and never more than what is left of the aggregate budget (which the
//! request defines as exactly the members' sum, so the budget can only run
//! out if a backend returned more than it was allowed — then the batch
//! fails). Each outcome is the closed per-file union (table in `read_file`);
//! a failure of the read itself fails the whole batch.

use corral_backend::Backend;
use corral_contract::{
    FailureReason, FileContent, FileSize, Operation, ReadFileOutcome, ReadFilesRequest,
    ReadFilesResult, SandboxError,
};

use super::ContractAdapter;
use super::errors::{absent, failed};
use super::read_file::{Read, contained, located_under};

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ReadFilesRequest,
) -> Result<ReadFilesResult, SandboxError> {
    let op = Operation::ReadFiles;
    if !adapter.envelope.read_files {
        return Err(absent(op));
    }
    let located = located_under(adapter, op, request.instance_id(), request.allowed_root()).await?;
    let mut remaining = request.aggregate_budget_bytes().get();
    let mut files = Vec::with_capacity(request.files().len());
    for member in request.files() {
        let path = member.path.clone();
        // The budget is the exact sum of the members and every earlier member
        // took at most its own limit, so this never cuts a member short.
        let max = member.maximum_bytes.get().min(remaining);
        let read = contained(adapter, op, &located, request.allowed_root(), &path, max).await;
        let outcome = match read {
            Read::Bytes(bytes) => {
                let len = bytes.len() as u64;
                if len > max {
                    return Err(failed(op, FailureReason::ResourceExhausted));
                }
                remaining -= len;
                let content = FileContent::new(bytes)
                    .map_err(|_| failed(op, FailureReason::ResourceExhausted))?;
                ReadFileOutcome::Ok {
                    path,
                    size: FileSize::of_len(content.len()),
                    content,
                }
            }
            Read::Missing => ReadFileOutcome::Missing { path },
            Read::TooLarge { actual, .. } => ReadFileOutcome::TooLarge {
                path,
                size: FileSize::new(actual)
                    .map_err(|_| failed(op, FailureReason::PlatformRejected))?,
                limit: member.maximum_bytes,
            },
            Read::Refused(reason) => ReadFileOutcome::Refused { path, reason },
            Read::Failed(error) => return Err(error),
        };
        files.push(outcome);
    }
    Ok(ReadFilesResult { files })
}
