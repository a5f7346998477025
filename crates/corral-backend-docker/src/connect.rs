//! Connecting to the engine: one connection, the API version negotiated
//! once, the image sandboxes start from checked (except for a caller that
//! only reclaims), and whether container files are reachable from this
//! host.

use std::path::Path;

use bollard::Docker;
use corral_backend::{PlatformError, Result};

use crate::DockerBackend;
use crate::error::{LOAD_HINT, map_error};
use crate::files::DockerFiles;

/// The image sandboxes start from unless configured otherwise: a small
/// root filesystem imported from the host's `busybox-static` when a
/// scratch backend connects (see [`crate::busybox_image`]).
pub const DEFAULT_IMAGE: &str = "corral-test:busybox-curl";

impl DockerBackend {
    /// Connects to the engine named by `DOCKER_HOST` (the local unix
    /// socket `/var/run/docker.sock` by default) and starts sandboxes
    /// from [`DEFAULT_IMAGE`].
    pub async fn connect() -> Result<Self> {
        Self::connect_with_image(DEFAULT_IMAGE).await
    }

    /// Connects and starts sandboxes from `image`, which must already be
    /// in the engine (no registry is contacted).
    pub async fn connect_with_image(image: &str) -> Result<Self> {
        let backend = Self::connect_without_image_check(image).await?;
        match backend.docker.inspect_image(image).await {
            Ok(_) => Ok(backend),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Err(PlatformError::Unavailable {
                what: format!("the image {image:?}"),
                detail: format!(
                    "it is not in the Docker Engine (no registry is contacted); {LOAD_HINT}"
                ),
            }
            .into()),
            Err(e) => Err(map_error(&format!("inspecting image {image}"), &e)),
        }
    }

    /// Connects as [`DockerBackend::connect_with_image`] does, but without
    /// checking that `image` is in the engine: for what only lists,
    /// inspects and destroys sandboxes (`corral gc`), which must work on an
    /// engine that holds none of corral's images. A create from it fails on
    /// the engine's own answer when the image is missing.
    pub async fn connect_without_image_check(image: &str) -> Result<Self> {
        let host = std::env::var("DOCKER_HOST").ok();
        let docker = Docker::connect_with_defaults()
            .map_err(|e| map_error("connecting to the Docker Engine", &e))?
            .negotiate_version()
            .await
            .map_err(|e| map_error("connecting to the Docker Engine", &e))?;
        let info = docker
            .info()
            .await
            .map_err(|e| map_error("reading the Docker Engine's info", &e))?;
        let unix_socket = host
            .as_deref()
            .is_none_or(|h| h.starts_with("unix://") || h.starts_with('/'));
        let overlay2 = info.driver.as_deref() == Some("overlay2");
        let root_here = info
            .docker_root_dir
            .as_deref()
            .is_some_and(|d| Path::new(d).join("overlay2").is_dir());
        Ok(DockerBackend {
            files: DockerFiles::new(docker.clone()),
            pending: std::sync::Arc::new(crate::pending::Pending::new(docker.clone())),
            docker,
            image: image.to_string(),
            local_fs: unix_socket && overlay2 && root_here,
            scope: None,
        })
    }
}
