//! Opening a backend: the default rule, the remote form, and how opening
//! fails ([`OpenError`]). The in-tree backends' own openers are rows of
//! [`BackendKind`]'s table.

use std::path::Path;

use corral_backend::BackendError;
use corral_backend_docker::busybox_image::BusyboxBackendError;
use corral_wire::{RemoteBackend, Token, TokenError};

use crate::kind::BackendKind;
use crate::opened::OpenedBackend;

/// The prefix of a remote backend's name: `remote+http://HOST:PORT`.
pub const REMOTE_PREFIX: &str = "remote+";

/// The environment variable naming the file that holds a remote server's
/// bearer token.
pub const TOKEN_FILE_ENV: &str = "CORRAL_TOKEN_FILE";

/// The environment variable naming the image docker sandboxes start from.
pub const DOCKER_IMAGE_ENV: &str = "CORRAL_DOCKER_IMAGE";

/// Why a backend could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// This host cannot run the backend.
    #[error("the {backend} backend cannot run here: {why}")]
    Unavailable {
        /// The backend.
        backend: BackendKind,
        /// The host's reason.
        why: String,
    },
    /// The backend refused to open, or its server or engine to connect.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A remote backend was named, but no token file.
    #[error(
        "{REMOTE_PREFIX}{endpoint}: set {TOKEN_FILE_ENV} to the file holding the server's bearer token"
    )]
    TokenFileUnset {
        /// The server's endpoint (`http://HOST:PORT`).
        endpoint: String,
    },
    /// The token file could not be read, or holds no valid token.
    #[error("{TOKEN_FILE_ENV}: {0}")]
    Token(#[from] TokenError),
    /// No Docker Engine answers, or the busybox image cannot be made.
    #[error(transparent)]
    ScratchEngine(#[from] BusyboxBackendError),
    /// A temporary state directory could not be created.
    #[error("creating a temporary state directory: {message}")]
    StateDir {
        /// The platform's message.
        message: String,
    },
}

/// The image docker sandboxes start from: [`DOCKER_IMAGE_ENV`], or the
/// test image.
pub fn docker_image() -> String {
    std::env::var(DOCKER_IMAGE_ENV)
        .unwrap_or_else(|_| corral_backend_docker::DEFAULT_IMAGE.to_string())
}

/// The default backend, opened: `linux` — corral's own isolation —
/// wherever this host allows it, else `local`, which isolates next to
/// nothing, with the reason linux cannot run here (the caller says so).
pub async fn open_default() -> Result<(OpenedBackend, Option<String>), OpenError> {
    match BackendKind::Linux.available() {
        Ok(()) => Ok((BackendKind::Linux.open_available().await?, None)),
        Err(why) => Ok((BackendKind::Local.open().await?, Some(why))),
    }
}

/// Connects to the `corral serve` at `endpoint` (`http://HOST:PORT`) with
/// the token in the file [`TOKEN_FILE_ENV`] names.
pub async fn open_remote(endpoint: &str) -> Result<RemoteBackend, OpenError> {
    let Some(path) = std::env::var_os(TOKEN_FILE_ENV) else {
        return Err(OpenError::TokenFileUnset {
            endpoint: endpoint.to_string(),
        });
    };
    let token = Token::from_file(Path::new(&path))?;
    Ok(RemoteBackend::connect(endpoint, token).await?)
}
