//! Physically contained reads from the host, where the engine is local and
//! keeps container files in overlay2: the container's `MergedDir` (its
//! whole root as the container sees it) is opened as a directory
//! descriptor, and the read is resolved by the kernel beneath the allowed
//! root with `openat2` ([`ContainedRoot::read_under`]). Where the engine's
//! files are not reachable the backend does not declare the member, and
//! the contract's read fails closed.

use std::os::fd::OwnedFd;

use async_trait::async_trait;
use corral_backend::contained::ContainedRoot;
use corral_backend::task::blocking;
use corral_backend::{BackendError, ContainedReadFailure, ContainedReadOps, PlatformError, Result};
use rustix::fs::{Mode, OFlags};

use crate::DockerBackend;
use crate::lifecycle;

/// What a failed blocking task of this backend is called in its error.
pub(crate) const TASK: &str = "docker backend task";

/// A descriptor of running sandbox `id`'s merged root on this host.
pub(crate) async fn open_root(backend: &DockerBackend, id: &str) -> Result<OwnedFd> {
    let inspect = lifecycle::inspect(backend, id, "inspect").await?;
    let driver = inspect.graph_driver.unwrap_or_default();
    let merged = match driver.data.get("MergedDir") {
        Some(dir) if driver.name == "overlay2" => dir.clone(),
        _ => {
            return Err(BackendError::unsupported(
                "docker",
                format!(
                    "read {id}'s files from the host (storage driver {:?})",
                    driver.name
                ),
            ));
        }
    };
    let id = id.to_owned();
    blocking(TASK, move || {
        rustix::fs::open(
            merged.as_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            BackendError::from(PlatformError::Unavailable {
                what: format!("opening {id}'s merged root on this host"),
                detail: e.to_string(),
            })
        })
    })
    .await
}

#[async_trait]
impl ContainedReadOps for DockerBackend {
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &corral_backend::SandboxPath,
        path: &corral_backend::SandboxPath,
        max_bytes: u64,
    ) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
        let root = open_root(self, id).await?;
        let (allowed_root, path) = (allowed_root.clone(), path.clone());
        blocking(TASK, move || {
            ContainedRoot::from_dir_fd(root)
                .read_under(&allowed_root, &path, max_bytes)
                .map_err(ContainedReadFailure::from)
        })
        .await
    }
}
