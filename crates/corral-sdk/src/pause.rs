//! Pause and resume: freeze every process of a sandbox and thaw it — the
//! backend's optional pause primitives (`Capabilities::pause`).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use corral_sdk::{CreateOptions, Sandbox};
//!
//! let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
//! let sandbox = Sandbox::create(backend, CreateOptions::default()).await?;
//! sandbox.pause().await?;
//! assert!(sandbox.run("true").await.is_err(), "a paused sandbox runs nothing");
//! sandbox.resume().await?;
//! assert_eq!(sandbox.run("echo back").await?.stdout_text(), "back\n");
//! # Ok::<(), corral_sdk::SandboxError>(())
//! # }).unwrap();
//! ```

use corral_backend::{BackendError, PauseOps};

use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

impl Sandbox {
    /// Freezes every process of the sandbox until [`Sandbox::resume`];
    /// meanwhile it runs nothing. Fails with `unsupported` on a backend
    /// without pause (`Capabilities::pause`).
    pub async fn pause(&self) -> Result<()> {
        self.pause_ops(Operation::Pause)?
            .pause(self.id())
            .await
            .map_err(|e| self.error(Operation::Pause, e))
    }

    /// Thaws a paused sandbox. Fails with `unsupported` on a backend
    /// without pause.
    pub async fn resume(&self) -> Result<()> {
        self.pause_ops(Operation::Resume)?
            .resume(self.id())
            .await
            .map_err(|e| self.error(Operation::Resume, e))
    }

    fn pause_ops(&self, op: Operation) -> Result<&dyn PauseOps> {
        self.backend().pause_ops().ok_or_else(|| {
            self.error(
                op,
                BackendError::unsupported(self.provider(), "pause or resume sandboxes"),
            )
        })
    }
}
