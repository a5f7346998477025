//! The docker backend the tests share: the engine of `DOCKER_HOST` (or the
//! local socket) with the busybox image imported at set-up. Where no engine
//! answers, or the busybox image cannot be made, a test prints why and skips.

use corral_backend_docker::DockerBackend;
use corral_backend_docker::busybox_image::{self, BusyboxBackendError};

/// The backend, or `None` after printing a skip line naming `test` and the reason.
pub async fn backend(test: &str) -> Option<DockerBackend> {
    match busybox_image::connect().await {
        Ok(backend) => Some(backend),
        Err(BusyboxBackendError::NoEngine(reason)) => {
            eprintln!("skip: {test}: {reason}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}
