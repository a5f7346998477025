//! Construction-time check: every declared optional member exists.

use std::sync::Arc;

use crate::backend::Backend;
use crate::error::{PlatformError, Result};

/// Refuses a backend that declares an optional member it does not implement,
/// with the `provider` code (the SDK's "a capability without its method
/// fails at creation"). Call it once when a backend is constructed;
/// [`Verified`] carries the proof that it ran.
pub fn verify(backend: &dyn Backend) -> Result<()> {
    let caps = backend.capabilities();
    let checks: [(&str, bool, bool); 12] = [
        ("pause", caps.pause, backend.pause_ops().is_some()),
        ("snapshot", caps.snapshot, backend.snapshot_ops().is_some()),
        (
            "snapshot_clone",
            caps.snapshot_clone,
            backend.snapshot_clone_ops().is_some(),
        ),
        ("terminal", caps.terminal, backend.terminal_ops().is_some()),
        (
            "start_process",
            caps.start_process,
            backend.process_ops().is_some(),
        ),
        ("usage", caps.usage, backend.usage_ops().is_some()),
        (
            "read_range",
            caps.read_range,
            backend.files().ranged().is_some(),
        ),
        (
            "contained_read",
            caps.contained_read,
            backend.contained_read_ops().is_some(),
        ),
        (
            "list_tree",
            caps.list_tree,
            backend.tree_list_ops().is_some(),
        ),
        (
            "write_batch",
            caps.write_batch,
            backend.batch_write_ops().is_some(),
        ),
        ("reclaim", caps.reclaim, backend.reclaim_ops().is_some()),
        (
            "port_connect",
            caps.port_connect,
            backend.port_connect_ops().is_some(),
        ),
    ];
    for (member, declared, present) in checks {
        if declared && !present {
            return Err(PlatformError::Defective {
                what: format!(
                    "the {} backend declares {member} but does not implement it",
                    backend.name()
                ),
            }
            .into());
        }
    }
    if caps.snapshot_clone && !caps.snapshot {
        return Err(PlatformError::Defective {
            what: format!(
                "the {} backend declares snapshot_clone without snapshot",
                backend.name()
            ),
        }
        .into());
    }
    Ok(())
}

/// A backend [`verify`] has accepted: the proof, carried by its type, that
/// the construction check ran, so that whoever receives it need not run it
/// again. Only [`Verified::new`] and [`Verified::new_shared`] make one, and
/// both run the check; [`Verified::into_shared`] keeps the proof when the
/// backend goes behind an [`Arc`].
///
/// ```
/// # fn demo(backend: impl corral_backend::Backend) -> corral_backend::Result<()> {
/// let verified = corral_backend::Verified::new(backend)?;
/// let shared = verified.into_shared();
/// let another = shared.clone(); // still verified, never checked again
/// # let _ = another;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Verified<T>(T);

impl<B: Backend> Verified<B> {
    /// `backend`, once [`verify`] accepts it.
    pub fn new(backend: B) -> Result<Verified<B>> {
        verify(&backend)?;
        Ok(Verified(backend))
    }

    /// The same backend behind an [`Arc`], still verified.
    pub fn into_shared(self) -> Verified<Arc<B>> {
        Verified(Arc::new(self.0))
    }
}

impl<B: Backend> Verified<Arc<B>> {
    /// The shared `backend`, once [`verify`] accepts it.
    pub fn new_shared(backend: Arc<B>) -> Result<Verified<Arc<B>>> {
        verify(&*backend)?;
        Ok(Verified(backend))
    }
}

impl<T> Verified<T> {
    /// The backend.
    pub fn get(&self) -> &T {
        &self.0
    }

    /// The backend, without the proof.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Verified<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
