//! Complete leaf listings (`TreeListOps`) of a directory of the sandbox:
//! the shared contained file system's [`list_tree`], walked from the host
//! through descriptors resolved in the sandbox root, never following a
//! symlink.
//!
//! [`list_tree`]: corral_backend::contained_fs::ContainedFs::list_tree

use async_trait::async_trait;
use corral_backend::contained_fs::SandboxPath;
use corral_backend::{Result, TreeListOps, TreeListing};

use crate::LinuxBackend;
use crate::files::sandbox_fs;

#[async_trait]
impl TreeListOps for LinuxBackend {
    async fn list_tree(&self, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
        let (state, id, root) = (self.state().clone(), id.to_owned(), root.to_owned());
        crate::blocking::blocking(move || {
            let root = SandboxPath::parse("root", &root)?;
            sandbox_fs(&state, &id)?.list_tree(&root, max_entries)
        })
        .await
    }
}
