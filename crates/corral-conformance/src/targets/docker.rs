//! The `docker` target: the contract adapter over corral's docker backend
//! on the Docker Engine of `DOCKER_HOST` (the local socket by default),
//! with the envelope [`envelopes::docker_for`] derives from what the
//! backend declares on this engine. The target's backend is scoped to a
//! fresh label, so it sees only what its own cases made on a shared
//! engine; every container and snapshot of that scope is removed when the
//! target is dropped.
//!
//! The test image (`corral-test:busybox-curl`: busybox plus the host's
//! curl) is imported at set-up when the engine lacks it — never pulled.
//! The egress fixture is two HTTP servers on the host's loopback: a `none`
//! sandbox has a loopback of its own, so reaching either would prove its
//! namespace leaks. The backend enforces no allowlist, so
//! `allowlist-egress` is a recorded skip.

use std::sync::Arc;

use corral_backend::{Backend, BackendError, Command, Labels, Verified};
use corral_backend_docker::DockerBackend;
use corral_contract::SandboxError;
use corral_registry::{BackendKind, Scratch, adapter};
use corral_runtime::adapter::ContractAdapter;

use crate::sdk::SdkConformanceOptions;
use crate::target::{ConformanceTarget, EgressFixture, Inventory, SdkTarget, Target};
use crate::targets::declared::{declared, http_server_on};
use crate::targets::inventory::backend_inventory;
use crate::targets::loopback::{LoopbackServer, curl_fixture};

/// `ContractAdapter<DockerBackend>` on a scope of its own.
#[derive(Debug)]
pub struct DockerTarget {
    backend: Verified<Arc<DockerBackend>>,
    servers: [LoopbackServer; 2],
}

/// Why the docker target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DockerTargetError {
    /// No Docker Engine answers here, or the test image cannot be made
    /// (the reason says why).
    #[error("no usable Docker Engine: {0}")]
    Unavailable(String),
    /// A loopback test server of the egress fixture could not start.
    #[error("starting a loopback test server: {0}")]
    Server(#[source] std::io::Error),
}

impl DockerTarget {
    /// Connects to the engine, imports the busybox image if it is missing, and
    /// scopes the backend to a fresh label. Must run inside a tokio runtime.
    pub async fn new() -> Result<Self, DockerTargetError> {
        let unavailable = |e: &dyn std::fmt::Display| DockerTargetError::Unavailable(e.to_string());
        let scope = format!(
            "conformance-{}",
            corral_backend::statefile::random_hex().map_err(|e| unavailable(&e))?
        );
        let backend = Scratch::docker_scoped(&scope)
            .await
            .map_err(|e| unavailable(&e))?
            .into_shared();
        let servers = LoopbackServer::pair().map_err(DockerTargetError::Server)?;
        Ok(Self { backend, servers })
    }

    /// [`DockerTarget::new`] from synchronous code (inside a runtime or
    /// not): set up on a thread with a runtime of its own.
    pub fn connect_blocking() -> Result<Self, DockerTargetError> {
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| DockerTargetError::Unavailable(format!("a runtime: {e}")))?;
            runtime.block_on(Self::new())
        })
        .join()
        .unwrap_or_else(|_| {
            Err(DockerTargetError::Unavailable(
                "the set-up thread panicked".into(),
            ))
        })
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<DockerBackend> {
        self.backend.get()
    }
}

impl Drop for DockerTarget {
    fn drop(&mut self) {
        // Remove everything of this scope. Drop cannot await, and may run
        // inside a runtime: sweep on a thread with a runtime of its own.
        let backend = Arc::clone(self.backend.get());
        let sweep = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(backend.reap(&Labels::new())).ok()
        });
        let _ = sweep.join();
    }
}

impl Target for DockerTarget {
    fn name(&self) -> String {
        corral_registry::ConformanceTarget::Docker.name().into()
    }
}

impl ConformanceTarget for DockerTarget {
    type Provider = ContractAdapter<DockerBackend>;

    fn provider(&self) -> Result<Self::Provider, SandboxError> {
        adapter(&self.backend)
    }

    fn egress(&self) -> Option<EgressFixture> {
        curl_fixture(self.servers.each_ref().map(LoopbackServer::address))
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&**self.backend.get()).await)
    }
}

/// Through the SDK the docker target runs live on a real engine, in the
/// busybox-and-curl test image: no git there, and no live processes in the
/// backend; its HTTP server is busybox's `httpd`, reached through the
/// published port.
impl SdkTarget for DockerTarget {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(self.backend.get()) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared(Some(BackendKind::Docker), true)
    }

    fn http_server(&self, port: u16) -> Command {
        http_server_on(Some(BackendKind::Docker), port)
    }
}
