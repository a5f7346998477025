//! [`BackendName`]: what `--backend NAME` names, parsed once.

use std::str::FromStr;
use std::sync::Arc;

use corral_backend::Backend;

use crate::kind::BackendKind;
use crate::open::{OpenError, REMOTE_PREFIX, open_remote};

/// A backend by name: an in-tree one, or `remote+http(s)://HOST:PORT`, the
/// backend a `corral serve` on another machine (or this one) serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendName {
    /// An in-tree backend.
    InTree(BackendKind),
    /// A remote backend, reached over corral-wire.
    Remote {
        /// The server's endpoint, `http://HOST:PORT` (checked when
        /// connecting).
        endpoint: String,
    },
}

/// A name that is neither an in-tree backend nor the remote form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown backend {name:?}; known backends: {known}, {REMOTE_PREFIX}http(s)://HOST:PORT",
    known = BackendKind::names()
)]
pub struct UnknownBackend {
    /// The name given.
    pub name: String,
}

impl FromStr for BackendName {
    type Err = UnknownBackend;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Some(kind) = BackendKind::from_name(name) {
            return Ok(BackendName::InTree(kind));
        }
        match name.strip_prefix(REMOTE_PREFIX) {
            Some(endpoint) => Ok(BackendName::Remote {
                endpoint: endpoint.to_string(),
            }),
            None => Err(UnknownBackend {
                name: name.to_string(),
            }),
        }
    }
}

impl BackendName {
    /// Opens the backend behind its primitives (see
    /// [`BackendKind::open`] and [`open_remote`]).
    pub async fn open(&self) -> Result<Arc<dyn Backend>, OpenError> {
        match self {
            BackendName::InTree(kind) => Ok(kind.open().await?.into_dyn()),
            BackendName::Remote { endpoint } => Ok(Arc::new(open_remote(endpoint).await?)),
        }
    }
}
