//! Complete leaf listings (`TreeListOps`) of a directory of the sandbox:
//! the shared contained file system's [`list_tree`], walked from the host
//! through descriptors resolved in the sandbox root, never following a
//! symlink.
//!
//! [`list_tree`]: corral_backend::contained_fs::ContainedFs::list_tree

use async_trait::async_trait;
use corral_backend::contained_fs::SplitPath;
use corral_backend::{Result, SandboxPath, TreeListOps, TreeListing};

use crate::LinuxBackend;
use crate::files::sandbox_fs;

#[async_trait]
impl TreeListOps for LinuxBackend {
    async fn list_tree(
        &self,
        id: &str,
        root: &SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing> {
        let (state, id, root) = (self.state().clone(), id.to_owned(), SplitPath::from(root));
        crate::blocking::blocking(move || sandbox_fs(&state, &id)?.list_tree(&root, max_entries))
            .await
    }
}
