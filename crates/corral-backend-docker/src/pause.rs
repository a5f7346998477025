//! `pause` and `resume`: the engine's cgroup freezer.

use async_trait::async_trait;
use corral_backend::{BackendError, PauseOps, Result};

use crate::DockerBackend;
use crate::error::sandbox_error;
use crate::labels;

#[async_trait]
impl PauseOps for DockerBackend {
    async fn pause(&self, id: &str) -> Result<()> {
        if !labels::is_sandbox_id(id) {
            return Err(BackendError::sandbox_not_found(id));
        }
        self.docker
            .pause_container(id)
            .await
            .map_err(|e| sandbox_error(id, &format!("pause {id}"), &e))
    }

    async fn resume(&self, id: &str) -> Result<()> {
        if !labels::is_sandbox_id(id) {
            return Err(BackendError::sandbox_not_found(id));
        }
        self.docker
            .unpause_container(id)
            .await
            .map_err(|e| sandbox_error(id, &format!("resume {id}"), &e))
    }
}
