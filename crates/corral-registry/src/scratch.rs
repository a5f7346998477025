//! [`Scratch`]: a backend holding nothing of the user's, and the
//! temporary state directory it must not outlive
//! ([`BackendKind::open_scratch`](crate::BackendKind::open_scratch)).

use crate::open::OpenError;
use crate::opened::OpenedBackend;

/// A backend opened for a measurement or a test, with its temporary state
/// directory (none for the backends that keep no state on this host).
#[derive(Debug)]
pub struct Scratch {
    /// The backend.
    pub backend: OpenedBackend,
    /// Its state directory, removed when dropped or closed.
    pub state_dir: Option<tempfile::TempDir>,
}

impl Scratch {
    /// A new, empty temporary directory for a backend's state (never the
    /// user's own).
    pub(crate) fn state_dir() -> Result<tempfile::TempDir, OpenError> {
        tempfile::Builder::new()
            .prefix("corral-scratch-")
            .tempdir()
            .map_err(|source| OpenError::StateDir {
                message: source.to_string(),
            })
    }

    /// `backend`, keeping its state in `dir`.
    pub(crate) fn in_dir(backend: OpenedBackend, dir: tempfile::TempDir) -> Self {
        Scratch {
            backend,
            state_dir: Some(dir),
        }
    }

    /// `backend`, which keeps no state directory on this host.
    pub(crate) fn without_dir(backend: OpenedBackend) -> Self {
        Scratch {
            backend,
            state_dir: None,
        }
    }
}
