//! The `local` target: the contract adapter over the local backend, with
//! the envelope the local backend declares, in a temporary state directory
//! that is removed when the target is dropped.
//!
//! The local backend isolates next to nothing: where the host allows it,
//! `network: none` runs every command in a new, empty network namespace.
//! Its egress fixture is two test servers on this machine's loopback — the
//! host's network, which a workload without that namespace would reach — so
//! the `none` case proves the namespace really cuts the workload off. It
//! enforces no allowlist, so that case is a recorded skip.

use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, BackendError, Verified};
use corral_backend_local::LocalBackend;
use corral_contract::SandboxError;
use corral_registry::{BackendKind, OpenError, Scratch, adapter};
use corral_runtime::adapter::ContractAdapter;
use tempfile::TempDir;

use crate::sdk::SdkConformanceOptions;
use crate::target::{ConformanceTarget, EgressFixture, Inventory, SdkTarget, Target};
use crate::targets::declared::declared;
use crate::targets::inventory::backend_inventory;
use crate::targets::loopback::{LoopbackServer, curl_fixture};

/// `ContractAdapter<LocalBackend>` with `envelopes::local_for` its capabilities on this host.
#[derive(Debug)]
pub struct LocalTarget {
    backend: Verified<Arc<LocalBackend>>,
    state: TempDir,
    servers: [LoopbackServer; 2],
}

/// Why the local target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LocalTargetError {
    /// The registry could not open the backend on a temporary state
    /// directory.
    #[error("opening the local backend: {0}")]
    Open(#[source] OpenError),
    /// A loopback test server for the egress fixture could not start.
    #[error("starting a loopback test server: {0}")]
    Server(#[source] std::io::Error),
}

impl LocalTarget {
    /// A target on a new temporary state directory, the backend opened
    /// (and verified) by the registry's scratch opener.
    pub fn new() -> Result<Self, LocalTargetError> {
        let (backend, state) = Scratch::local().map_err(LocalTargetError::Open)?;
        let backend = backend.into_shared();
        let servers = LoopbackServer::pair().map_err(LocalTargetError::Server)?;
        Ok(Self {
            backend,
            state,
            servers,
        })
    }

    /// The temporary state directory (removed on drop).
    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<LocalBackend> {
        self.backend.get()
    }
}

impl Target for LocalTarget {
    fn name(&self) -> String {
        corral_registry::ConformanceTarget::Local.name().into()
    }
}

impl ConformanceTarget for LocalTarget {
    type Provider = ContractAdapter<LocalBackend>;

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

impl SdkTarget for LocalTarget {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(self.backend.get()) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared(Some(BackendKind::Local), true)
    }
}
