//! Complete leaf listings (`TreeListOps`) of a directory of the sandbox,
//! walked from the host through descriptors beneath the sandbox root, never
//! following a symlink. The walk is the local backend's.

use std::os::fd::AsFd;

use async_trait::async_trait;
use corral_backend::{BackendError, Result, TreeListOps, TreeListing, path};
use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::LinuxBackend;
use crate::contained::{open_beneath, open_root};
use crate::state::State;

/// Every leaf under `root` in sandbox `id`, sorted by path; `complete:
/// false` when it stopped at `max_entries`. Empty directories are not leaves.
fn list_tree(state: &State, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
    let comps = path::normalize("root", root)?;
    let shown = format!("/{}", comps.join("/"));
    let sroot = open_root(state, id)?;
    let dir = match open_beneath(&sroot, &comps, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) => {
            return Err(BackendError::invalid(format!(
                "list_tree {shown}: not a directory"
            )));
        }
        Err(Errno::NOENT) => {
            return Err(BackendError::new(
                corral_backend::ErrorCode::NotFound,
                format!("list_tree {shown}: no such directory"),
            ));
        }
        Err(e) => {
            return Err(BackendError::from_io(
                format!("list_tree {shown}"),
                &e.into(),
            ));
        }
    };
    corral_backend::leaves::list_leaves(dir.as_fd(), &shown, max_entries)
}

#[async_trait]
impl TreeListOps for LinuxBackend {
    async fn list_tree(&self, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
        let (state, id, root) = (self.state().clone(), id.to_owned(), root.to_owned());
        crate::backend::blocking(move || list_tree(&state, &id, &root, max_entries)).await
    }
}
