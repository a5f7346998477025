//! Backends by name.
//!
//! The default is `linux` — corral's own isolation — wherever this host
//! allows it (root, overlayfs, namespaces). Elsewhere the CLI falls back to
//! `local`, which isolates next to nothing, and says so in one line on
//! stderr. `docker` is a container of the Docker Engine of `DOCKER_HOST`
//! (the local socket by default), started from `corral-test:busybox-curl`
//! unless `CORRAL_DOCKER_IMAGE` names another image already in the engine.

use std::sync::Arc;

use corral_backend::{Backend, verify};
use corral_backend_docker::DockerBackend;
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;

use crate::error::CliError;

/// The backends this build knows.
pub const KNOWN: &[&str] = &["linux", "local", "memory", "docker"];

/// Opens the backend called `name`, or the default when `None`, verified.
pub async fn open(name: Option<&str>) -> Result<Arc<dyn Backend>, CliError> {
    let backend: Arc<dyn Backend> = match name {
        None => default_backend()?,
        Some("linux") => {
            LinuxBackend::available().map_err(|why| {
                CliError::failure(
                    "unavailable",
                    format!("the linux backend cannot run here: {why}"),
                )
            })?;
            Arc::new(LinuxBackend::open(LocalBackend::default_state_dir())?)
        }
        Some("local") => Arc::new(LocalBackend::open(LocalBackend::default_state_dir())?),
        Some("memory") => Arc::new(MemoryBackend::new()),
        Some("docker") => Arc::new(open_docker().await?),
        Some(other) => {
            return Err(CliError::usage(format!(
                "unknown backend {other:?}; known backends: {}",
                KNOWN.join(", ")
            )));
        }
    };
    verify(&*backend)?;
    Ok(backend)
}

/// Connects to the engine of `DOCKER_HOST` in the caller's runtime, with
/// the image `CORRAL_DOCKER_IMAGE` names (the test image by default).
async fn open_docker() -> Result<DockerBackend, CliError> {
    let image = std::env::var("CORRAL_DOCKER_IMAGE")
        .unwrap_or_else(|_| corral_backend_docker::DEFAULT_IMAGE.to_string());
    Ok(DockerBackend::connect_with_image(&image).await?)
}

fn default_backend() -> Result<Arc<dyn Backend>, CliError> {
    match LinuxBackend::available() {
        Ok(()) => Ok(Arc::new(LinuxBackend::open(
            LocalBackend::default_state_dir(),
        )?)),
        Err(why) => {
            eprintln!("corral: notice: using the local backend, which isolates nothing: {why}");
            Ok(Arc::new(LocalBackend::open(
                LocalBackend::default_state_dir(),
            )?))
        }
    }
}

/// The backend that issued `id`, from its prefix, unless one is named.
pub async fn for_id(named: Option<&str>, id: &str) -> Result<Arc<dyn Backend>, CliError> {
    if named.is_some() {
        return open(named).await;
    }
    if id.starts_with("mem-") {
        return Err(CliError::failure(
            "not_found",
            format!(
                "no sandbox with id {id:?}: memory sandboxes live only inside the process that created them"
            ),
        ));
    }
    if id.starts_with("loc-") {
        return open(Some("local")).await;
    }
    if id.starts_with("lnx-") {
        return open(Some("linux")).await;
    }
    if id.starts_with("dkr-") {
        return open(Some("docker")).await;
    }
    open(None).await
}
