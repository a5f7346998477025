//! The one way this backend's async members run blocking host work: off
//! the async threads, its panics reported as errors. Low-level, so that
//! every member (the backend and the contract primitives beside it) can
//! use it without depending on one another.

use corral_backend::BackendError;

/// Runs blocking host work off the async threads.
pub(crate) async fn blocking<T, E>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E>
where
    T: Send + 'static,
    E: From<BackendError> + Send + 'static,
{
    corral_backend::task::blocking("linux backend task", f).await
}
