//! `pause` and `resume`: the engine's cgroup freezer.

use async_trait::async_trait;
use corral_backend::{BackendError, ErrorCode, PauseOps, Result};

use crate::DockerBackend;
use crate::error::map_error;
use crate::labels;

fn mapped(id: &str, what: &str, e: &bollard::errors::Error) -> BackendError {
    let err = map_error(&format!("{what} {id}"), e);
    if err.code == ErrorCode::NotFound {
        BackendError::sandbox_not_found(id)
    } else {
        err
    }
}

#[async_trait]
impl PauseOps for DockerBackend {
    async fn pause(&self, id: &str) -> Result<()> {
        if !labels::is_sandbox_id(id) {
            return Err(BackendError::sandbox_not_found(id));
        }
        self.docker
            .pause_container(id)
            .await
            .map_err(|e| mapped(id, "pause", &e))
    }

    async fn resume(&self, id: &str) -> Result<()> {
        if !labels::is_sandbox_id(id) {
            return Err(BackendError::sandbox_not_found(id));
        }
        self.docker
            .unpause_container(id)
            .await
            .map_err(|e| mapped(id, "resume", &e))
    }
}
