//! Backends by name, as the CLI opens them: every one is a row of
//! `corral_registry`.
//!
//! The default is `linux` — corral's own isolation — wherever this host
//! allows it (root, overlayfs, namespaces). Elsewhere the CLI falls back to
//! `local`, which isolates next to nothing, and says so in one line on
//! stderr. `docker` is a container of the Docker Engine of `DOCKER_HOST`
//! (the local socket by default), started from `corral-test:busybox-curl`
//! unless `CORRAL_DOCKER_IMAGE` names another image already in the engine.
//!
//! `remote+http(s)://HOST:PORT` is the backend a `corral serve` on another
//! machine (or this one) serves, reached over corral-wire with the bearer
//! token in the file `CORRAL_TOKEN_FILE` names.

use std::sync::Arc;

use corral_backend::Backend;
use corral_registry::{BackendKind, BackendName, OpenError, OpenedBackend};
use corral_wire::RemoteBackend;

use crate::error::CliError;

pub use corral_registry::{REMOTE_PREFIX, TOKEN_FILE_ENV, docker_image};

/// Opens the backend called `name`, or the default when `None`, verified
/// (once, by the registry that opens it).
pub async fn open(name: Option<&str>) -> Result<Arc<dyn Backend>, CliError> {
    Ok(match name {
        None => default_backend().await?.into_dyn(),
        Some(name) => {
            let name: BackendName = name.parse().map_err(|e| CliError::usage(format!("{e}")))?;
            name.open().await.map_err(open_error)?
        }
    })
}

/// Opens the in-tree backend `kind` on the default state directory, as
/// its own type (`unavailable` where this host cannot run it).
pub async fn open_kind(kind: BackendKind) -> Result<OpenedBackend, CliError> {
    kind.open().await.map_err(open_error)
}

/// Connects to the `corral serve` at `endpoint` (`http://HOST:PORT`) with
/// the token in the file [`TOKEN_FILE_ENV`] names.
pub async fn open_remote(endpoint: &str) -> Result<RemoteBackend, CliError> {
    corral_registry::open_remote(endpoint)
        .await
        .map_err(open_error)
}

/// The CLI's error for a backend that did not open: the message the
/// registry words, but for the flag a missing token file is named after.
fn open_error(e: OpenError) -> CliError {
    let message = e.to_string();
    match e {
        OpenError::Unavailable { .. } | OpenError::ScratchEngine(_) => {
            CliError::failure("unavailable", message)
        }
        OpenError::Backend(e) => CliError::from(e),
        OpenError::TokenFileUnset { .. } => CliError::usage(format!("--backend {message}")),
        OpenError::Token(_) => CliError::usage(message),
        OpenError::StateDir { .. } => CliError::failure("io", message),
    }
}

/// The default backend (`corral_registry::open_default`), saying on
/// stderr when it is not linux, and why.
async fn default_backend() -> Result<OpenedBackend, CliError> {
    let (backend, fallback) = corral_registry::open_default().await.map_err(open_error)?;
    if let Some(why) = fallback {
        eprintln!(
            "corral: notice: using the {} backend, which isolates nothing: {why}",
            backend.kind()
        );
    }
    Ok(backend)
}

/// The backend that issued `id`, from its prefix, unless one is named.
pub async fn for_id(named: Option<&str>, id: &str) -> Result<Arc<dyn Backend>, CliError> {
    if named.is_some() {
        return open(named).await;
    }
    match BackendKind::issuer_of(id) {
        Some(kind) if !kind.outlives_its_process() => Err(CliError::failure(
            "not_found",
            format!(
                "no sandbox with id {id:?}: {kind} sandboxes live only inside the process that created them"
            ),
        )),
        Some(kind) => open(Some(kind.name())).await,
        None => open(None).await,
    }
}
