//! Complete leaf listings (`TreeListOps`) of a sandbox directory, walked
//! from the host through descriptors beneath the container's overlay2
//! merged root ([`crate::contained::open_root`]), never following a
//! symlink.

use std::os::fd::{AsFd, OwnedFd};

use async_trait::async_trait;
use corral_backend::contained::ContainmentReason;
use corral_backend::error::{FileOp, FsCause, FsError};
use corral_backend::task::blocking;
use corral_backend::{BackendError, Result, SandboxPath, TreeListOps, TreeListing};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::DockerBackend;

fn list_under(root: OwnedFd, dir: &SandboxPath, max_entries: usize) -> Result<TreeListing> {
    let comps: Vec<&str> = dir.components().collect();
    let shown = dir.to_string();
    let rel = if comps.is_empty() {
        ".".to_string()
    } else {
        comps.join("/")
    };
    let opened = corral_backend::contained::openat2_retrying(
        &root,
        rel.as_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    );
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) => {
            return Err(FsError::new(FileOp::ListTree, shown, FsCause::NotADirectory).into());
        }
        Err(Errno::NOENT) => {
            return Err(FsError::new(
                FileOp::ListTree,
                shown,
                FsCause::Refused(ContainmentReason::NotFound),
            )
            .into());
        }
        Err(e) => {
            return Err(BackendError::from_io(
                format!("list_tree {shown}"),
                &e.into(),
            ));
        }
    };
    corral_backend::leaves::list_leaves(fd.as_fd(), &shown, max_entries)
}

#[async_trait]
impl TreeListOps for DockerBackend {
    async fn list_tree(
        &self,
        id: &str,
        root: &SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing> {
        let fd = crate::contained::open_root(self, id).await?;
        let root = root.clone();
        blocking(crate::contained::TASK, move || {
            list_under(fd, &root, max_entries)
        })
        .await
    }
}
