//! Backends by name.

use std::sync::Arc;

use corral_backend::{Backend, verify};
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;

use crate::error::CliError;

/// The backend used when none is named.
pub const DEFAULT_BACKEND: &str = "local";

/// The backends this build knows.
pub const KNOWN: &[&str] = &["local", "memory"];

/// Opens the backend called `name` (the default when `None`), verified.
pub fn open(name: Option<&str>) -> Result<Arc<dyn Backend>, CliError> {
    let name = name.unwrap_or(DEFAULT_BACKEND);
    let backend: Arc<dyn Backend> = match name {
        "local" => Arc::new(LocalBackend::open(LocalBackend::default_state_dir())?),
        "memory" => Arc::new(MemoryBackend::new()),
        other => {
            return Err(CliError::usage(format!(
                "unknown backend {other:?}; known backends: {}",
                KNOWN.join(", ")
            )));
        }
    };
    verify(&*backend)?;
    Ok(backend)
}

/// The backend that issued `id`, from its prefix, unless one is named.
pub fn for_id(named: Option<&str>, id: &str) -> Result<Arc<dyn Backend>, CliError> {
    if named.is_some() {
        return open(named);
    }
    if id.starts_with("mem-") {
        return Err(CliError::failure(
            "not_found",
            format!(
                "no sandbox with id {id:?}: memory sandboxes live only inside the process that created them"
            ),
        ));
    }
    open(None)
}
