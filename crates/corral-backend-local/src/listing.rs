//! Complete leaf listings (`list_tree`, the shared contained file system's)
//! and usage (`usage`), both walks through descriptors that never follow a
//! symlink.

use corral_backend::SandboxPath;
use corral_backend::contained_fs::{FileOp, SplitPath};
use corral_backend::{BackendError, Result, TreeListing, Usage};
use rustix::fd::AsFd;
use rustix::fs::FileType;

use crate::files::sandbox_root;
use crate::state::State;
use corral_backend::walk::{self, Step, Visit};

/// Every leaf under `root` in sandbox `id` (the shared
/// [`list_tree`](corral_backend::contained_fs::ContainedFs::list_tree)).
pub(crate) fn list_tree(
    state: &State,
    id: &str,
    root: &SandboxPath,
    max_entries: usize,
) -> Result<TreeListing> {
    sandbox_root(state, id)?.list_tree(&SplitPath::from(root), max_entries)
}

/// Usage of sandbox `id`: the apparent size of everything under its root
/// (regular files and symlinks); CPU, memory and processes are not measured
/// (`None`): nothing groups a sandbox's host processes.
pub(crate) fn usage(state: &State, id: &str) -> Result<Usage> {
    let sroot = sandbox_root(state, id)?;
    let dir = sroot.open_dir(FileOp::OpenDir, &SplitPath::from(&SandboxPath::root()))?;
    let mut bytes = 0u64;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        if matches!(v.file_type(), FileType::RegularFile | FileType::Symlink) {
            bytes = bytes.saturating_add(u64::try_from(v.stat.st_size).unwrap_or(0));
        }
        Ok(Step::Descend)
    };
    walk::walk(dir.as_fd(), &mut visit).map_err(|e| BackendError::from_io("usage", &e))?;
    Ok(Usage {
        cpu_ms: None,
        memory_bytes: None,
        disk_bytes: Some(bytes),
        processes: None,
    })
}
