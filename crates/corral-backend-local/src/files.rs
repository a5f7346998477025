//! The file primitives over a sandbox's `root/`.
//!
//! Sandbox path `/x/y` is host path `<sandbox>/root/x/y`. The primitives are
//! the shared contained host-directory file system
//! ([`corral_backend::contained_fs`]), resolving beneath the root's
//! descriptor: no primitive follows a symlink out of the sandbox directory.
//! Contained reads ([`ContainedReadOps`]) are the shared
//! [`ContainedRoot::read_under`].

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::contained::{ContainedRoot, Resolution};
use corral_backend::contained_fs::{ContainedFs, ContainedFsSource, Ownership};
use corral_backend::{BackendError, ContainedReadFailure, ContainedReadOps, Result};

use crate::beneath::SandboxRoot;
use crate::blocking;
use crate::state::{State, require_meta};

/// The file primitives of the local backend: those of
/// [`ContainedFsSource`], over each sandbox's `root/`.
#[derive(Debug, Clone)]
pub(crate) struct LocalFiles {
    pub(crate) state: Arc<State>,
}

impl ContainedFsSource for LocalFiles {
    fn open_fs(&self, id: &str) -> Result<ContainedFs> {
        sandbox_root(&self.state, id)
    }
}

/// Opens the contained-read root of sandbox `id` (which must exist).
fn contained_root(state: &State, id: &str) -> Result<ContainedRoot> {
    require_meta(state, id)?;
    ContainedRoot::open(&state.root_dir(id)).map_err(|_| BackendError::sandbox_not_found(id))
}

/// Opens the file system of sandbox `id` (which must exist).
pub(crate) fn sandbox_root(state: &State, id: &str) -> Result<SandboxRoot> {
    require_meta(state, id)?;
    ContainedFs::open(
        &state.root_dir(id),
        id,
        Resolution::Beneath,
        Ownership::Process,
    )
}

#[async_trait]
impl ContainedReadOps for crate::LocalBackend {
    /// `path` must lie (lexically, after normalization) under
    /// `allowed_root`, which is itself resolved beneath the sandbox root;
    /// the read is then resolved by the kernel beneath `allowed_root`.
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
        blocking(move || {
            Ok(contained_root(&state, &id)?.read_under(&allowed_root, &path, max_bytes)?)
        })
        .await
    }
}
