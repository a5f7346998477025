//! Physically contained reads (`ContainedReadOps`): the shared
//! [`corral_backend::contained::ContainedRoot::read_under`] on a descriptor
//! of the sandbox root (`fs/root`) — `path` lexically under `allowed_root`,
//! `allowed_root` pinned by a descriptor resolved beneath the root, the read
//! resolved beneath that descriptor.

use std::os::fd::OwnedFd;

use async_trait::async_trait;
use corral_backend::contained::ContainedRoot;
use corral_backend::{BackendError, ContainedReadFailure, ContainedReadOps, Result, SandboxPath};
use rustix::fs::{Mode, OFlags};

use crate::LinuxBackend;
use crate::state::{State, require_meta};

/// The sandbox root of live sandbox `id`, as an `O_PATH` descriptor.
pub(crate) fn open_root(state: &State, id: &str) -> Result<OwnedFd> {
    require_meta(state, id)?;
    rustix::fs::open(
        crate::userns::rootless::files_root(state, id),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| BackendError::sandbox_not_found(id))
}

fn read_contained(
    state: &State,
    id: &str,
    allowed_root: &SandboxPath,
    p: &SandboxPath,
    max_bytes: u64,
) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
    Ok(ContainedRoot::from_dir_fd(open_root(state, id)?).read_under(allowed_root, p, max_bytes)?)
}

#[async_trait]
impl ContainedReadOps for LinuxBackend {
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &SandboxPath,
        path: &SandboxPath,
        max_bytes: u64,
    ) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
        let (state, id, allowed_root, path) = (
            self.state().clone(),
            id.to_owned(),
            allowed_root.clone(),
            path.clone(),
        );
        crate::blocking::blocking(move || {
            read_contained(&state, &id, &allowed_root, &path, max_bytes)
        })
        .await
    }
}
