//! Blocking host work (file systems, `/proc`, sockets of a sandbox's init)
//! run off the async threads.

use crate::error::{BackendError, PlatformError};

/// Runs `f` on tokio's blocking pool and returns what it returns. A task
/// that panicked or was cancelled is `provider`, its message `what` and the
/// task's failure (`"{what}: {failure}"`).
pub async fn blocking<T, E, F>(what: &str, f: F) -> Result<T, E>
where
    T: Send + 'static,
    E: From<BackendError> + Send + 'static,
    F: FnOnce() -> Result<T, E> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        E::from(BackendError::from(PlatformError::Defective {
            what: format!("{what}: {e}"),
        }))
    })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContainedReadFailure;
    use crate::error::{ErrorCode, RequestError};

    #[tokio::test]
    async fn returns_what_the_work_returns() {
        let ok: Result<u32, BackendError> = blocking("t", || Ok(7)).await;
        assert_eq!(ok, Ok(7));
        let failed: Result<u32, BackendError> =
            blocking("t", || Err(RequestError::EmptyArgv.into())).await;
        assert_eq!(failed, Err(RequestError::EmptyArgv.into()));
    }

    #[tokio::test]
    async fn a_panicked_task_is_a_provider_error_named_by_what() {
        let e = blocking::<(), BackendError, _>("test task", || panic!("boom"))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Provider);
        assert!(e.message().starts_with("test task: "), "{}", e.message());
        let e = blocking::<(), ContainedReadFailure, _>("test task", || panic!("boom"))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, ContainedReadFailure::Backend(b) if b.code() == ErrorCode::Provider),
            "{e:?}"
        );
    }
}
