//! `listProjectDir`: every leaf under a mount root, special files named.
//!
//! Declared only when the envelope says `list_project_dir`; otherwise the
//! contract's absent refusal, `SandboxLifecycleConflict{list_project_dir,
//! list_project_dir_unsupported}`. The root must lie within one of the
//! instance's own roots, else `outside_root`.
//!
//! The backend's complete leaf listing is translated one to one: a regular
//! file with its size and SHA-256, and every other leaf *named* —
//! `symlink`, `submodule` (a directory holding a `.git` file, not
//! descended), `device`, `socket`, `fifo`, `other`. Nothing is omitted: a
//! tree with more leaves than `max_entries` is refused as
//! `SandboxOperationFailed{list_project_dir, too_many_entries}`, so every
//! listing returned is `complete: true`.

use corral_backend::{Backend, TreeEntryKind};
use corral_contract::{
    ListProjectDirRequest, ListProjectDirResult, Operation, ProjectEntry, SandboxError,
};

use super::ContractAdapter;
use super::errors::absent;
use super::list_dir::{file_facts, leaf_path, tree};
use super::read_file::located_under;

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ListProjectDirRequest,
) -> Result<ListProjectDirResult, SandboxError> {
    let op = Operation::ListProjectDir;
    if !adapter.envelope.list_project_dir {
        return Err(absent(op));
    }
    let located = located_under(adapter, op, &request.instance_id, &request.root).await?;
    let listing = tree(
        adapter,
        op,
        &located.sandbox_id,
        &request.root,
        request.max_entries.get(),
    )
    .await?;
    let mut entries = Vec::with_capacity(listing.entries.len());
    for leaf in listing.entries {
        let path = leaf_path(op, &request.root, &leaf.path)?;
        entries.push(match leaf.kind {
            TreeEntryKind::File { size, sha256 } => {
                let (size, sha256) = file_facts(op, size, &sha256)?;
                ProjectEntry::File { path, size, sha256 }
            }
            TreeEntryKind::Symlink => ProjectEntry::Symlink { path },
            TreeEntryKind::Submodule => ProjectEntry::Submodule { path },
            TreeEntryKind::Device => ProjectEntry::Device { path },
            TreeEntryKind::Socket => ProjectEntry::Socket { path },
            TreeEntryKind::Fifo => ProjectEntry::Fifo { path },
            TreeEntryKind::Other => ProjectEntry::Other { path },
        });
    }
    Ok(ListProjectDirResult {
        entries,
        complete: true,
    })
}
