//! The docker backend the tests share: the engine of `DOCKER_HOST` (or the
//! local socket) with the test image imported at set-up. Where no engine
//! answers, or the test image cannot be made, a test prints why and skips.

use corral_backend_docker::DockerBackend;
use corral_backend_docker::testimage::{self, TestBackendError};

/// The backend, or `None` after printing a skip line naming `test` and the reason.
pub async fn backend(test: &str) -> Option<DockerBackend> {
    match testimage::backend().await {
        Ok(backend) => Some(backend),
        Err(TestBackendError::NoEngine(reason)) => {
            eprintln!("skip: {test}: {reason}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}
