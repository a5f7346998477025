//! The `memory` target: the contract adapter over the memory backend, with
//! the envelope the memory backend declares — the deterministic oracle.

use std::sync::Arc;

use corral_backend::{Backend, BackendError};
use corral_backend_memory::MemoryBackend;
use corral_contract::{HostPort, SandboxError};
use corral_registry::{BackendKind, envelopes};
use corral_runtime::adapter::ContractAdapter;

use crate::sdk::SdkConformanceOptions;
use crate::target::{ConformanceTarget, EgressFixture, EgressProbe, Inventory, SdkTarget, Target};
use crate::targets::declared::declared;
use crate::targets::inventory::backend_inventory;

/// The memory backend's egress fixture. The memory backend has no network:
/// its built-in `curl` answers for destinations the instance's policy
/// admits and fails with exit 7 for the others, so these names are never
/// resolved anywhere.
pub fn memory_egress() -> EgressFixture {
    let destination = |text: &str| {
        HostPort::new(text).unwrap_or_else(|e| unreachable!("the fixture is canonical: {e}"))
    };
    EgressFixture {
        allowed: destination("api.example.com:443"),
        denied: destination("blocked.example.net:443"),
        probe: EgressProbe::Curl,
    }
}

/// `ContractAdapter<MemoryBackend>` with `envelopes::memory()`.
#[derive(Debug, Clone)]
pub struct MemoryTarget {
    backend: Arc<MemoryBackend>,
}

impl MemoryTarget {
    /// A target over a new, empty memory backend.
    pub fn new() -> Self {
        Self::over(Arc::new(MemoryBackend::new()))
    }

    /// A target over `backend` (e.g. one on a manual clock).
    pub fn over(backend: Arc<MemoryBackend>) -> Self {
        Self { backend }
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<MemoryBackend> {
        &self.backend
    }
}

impl Default for MemoryTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for MemoryTarget {
    fn name(&self) -> String {
        corral_registry::ConformanceTarget::Memory.name().into()
    }
}

impl ConformanceTarget for MemoryTarget {
    type Provider = ContractAdapter<MemoryBackend>;

    fn provider(&self) -> Result<Self::Provider, SandboxError> {
        ContractAdapter::new(Arc::clone(&self.backend), envelopes::memory())
    }

    fn egress(&self) -> Option<EgressFixture> {
        Some(memory_egress())
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&*self.backend).await)
    }
}

impl SdkTarget for MemoryTarget {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared(Some(BackendKind::Memory), true)
    }
}
