//! The docker backend the tests share: the engine of `DOCKER_HOST` (or the
//! local socket) with the test image imported at set-up. Where no engine
//! answers, or the test image cannot be made, a test prints why and skips.

#![allow(dead_code)]

use corral_backend_docker::{DEFAULT_IMAGE, DockerBackend, testimage};

/// The backend, or `None` after printing a skip line naming `test` and the reason.
pub async fn backend(test: &str) -> Option<DockerBackend> {
    let docker = match bollard::Docker::connect_with_defaults() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skip: {test}: no Docker Engine client: {e}");
            return None;
        }
    };
    if let Err(e) = docker.ping().await {
        eprintln!("skip: {test}: no Docker Engine answers: {e}");
        return None;
    }
    let docker = match docker.negotiate_version().await {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skip: {test}: the Docker Engine's API version: {e}");
            return None;
        }
    };
    if let Err(e) = testimage::ensure(&docker, DEFAULT_IMAGE).await {
        eprintln!("skip: {test}: {e}");
        return None;
    }
    Some(
        DockerBackend::connect()
            .await
            .unwrap_or_else(|e| panic!("{test}: the engine answers but connect failed: {e}")),
    )
}
