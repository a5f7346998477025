//! `listDir`: the regular files under a mount root, with size and SHA-256.
//!
//! Declared only when the envelope says `list_dir`; otherwise the contract's
//! absent refusal, `SandboxLifecycleConflict{list_dir, list_dir_unsupported}`.
//! The root must lie within one of the instance's own roots (a mount or the
//! output tree), else `outside_root`.
//!
//! The listing is the backend's complete leaf listing (`list_tree`) with
//! everything but regular files left out; `max_entries` counts the regular
//! files only, so the backend is asked for up to the contract's bound of
//! 100,000 leaves. More regular files than `max_entries` (or a tree past the
//! bound) is `SandboxOperationFailed{list_dir, too_many_entries}` — never a
//! silently shortened list.

use corral_backend::{Backend, TreeEntryKind, TreeListing};
use corral_contract::bounds::MAX_LIST_ENTRIES;
use corral_contract::{
    Digest, FailureReason, FileSize, ListDirEntry, ListDirRequest, ListDirResult, Operation,
    SandboxError, SandboxPath,
};

use super::ContractAdapter;
use super::errors::{Subject, absent, failed, on};
use super::read_file::located_under;

/// The backend's complete listing of `root` in the located instance, at most
/// `max_entries` leaves; an incomplete one is `too_many_entries`.
pub(super) async fn tree<B: Backend>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    sandbox_id: &str,
    root: &SandboxPath,
    max_entries: u64,
) -> Result<TreeListing, SandboxError> {
    let Some(ops) = adapter.backend.tree_list_ops() else {
        return Err(absent(operation));
    };
    let max = usize::try_from(max_entries).unwrap_or(usize::MAX);
    let listing = ops
        .list_tree(sandbox_id, root, max)
        .await
        .map_err(on(operation, Subject::Path))?;
    if !listing.complete {
        return Err(failed(operation, FailureReason::TooManyEntries));
    }
    Ok(listing)
}

/// `root` joined with a listing's relative path; a path that does not join
/// is a backend defect.
pub(super) fn leaf_path(
    operation: Operation,
    root: &SandboxPath,
    relative: &str,
) -> Result<SandboxPath, SandboxError> {
    root.join(relative)
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))
}

/// A listing's size and digest as contract values.
pub(super) fn file_facts(
    operation: Operation,
    size: u64,
    sha256: &str,
) -> Result<(FileSize, Digest), SandboxError> {
    let defect = || failed(operation, FailureReason::PlatformRejected);
    Ok((
        FileSize::new(size).map_err(|_| defect())?,
        Digest::new(sha256).map_err(|_| defect())?,
    ))
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ListDirRequest,
) -> Result<ListDirResult, SandboxError> {
    let op = Operation::ListDir;
    if !adapter.envelope.list_dir {
        return Err(absent(op));
    }
    let located = located_under(adapter, op, &request.instance_id, &request.root).await?;
    let listing = tree(
        adapter,
        op,
        &located.sandbox_id,
        &request.root,
        MAX_LIST_ENTRIES,
    )
    .await?;
    let mut entries = Vec::new();
    for leaf in listing.entries {
        let TreeEntryKind::File { size, sha256 } = &leaf.kind else {
            continue;
        };
        if entries.len() as u64 == request.max_entries.get() {
            return Err(failed(op, FailureReason::TooManyEntries));
        }
        let (size, sha256) = file_facts(op, *size, sha256)?;
        entries.push(ListDirEntry {
            path: leaf_path(op, &request.root, &leaf.path)?,
            size,
            sha256,
        });
    }
    Ok(ListDirResult { entries })
}
