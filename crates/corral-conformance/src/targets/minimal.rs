//! The `minimal` target: the contract's minimum provider, made from the
//! memory oracle with `Narrow::minimum` — the memory envelope's identity
//! (placement, tier, platforms, enforcement, revisions) with every optional
//! capability of `SandboxProviderCapabilities::minimum()` removed:
//! `network_modes: ["none"]`, `retention_modes: ["ephemeral_zdr"]`, no
//! snapshots, no optional member, `readFile` failing closed, `max_mounts: 0`.
//! (The literal `minimum()` envelope cannot sit on the memory oracle: its
//! `hosted` placement and `provider_enforced` memory and CPU limits claim
//! more than the oracle does, and `Narrow` refuses a wider envelope.)
//!
//! It earns `process`, `network-none`, `zdr` and `cleanup`, so it runs the
//! `none`-egress, ZDR-release and orphan-reclaim cases and records the other
//! six as skips — exactly what the contract predicts for its minimum
//! provider.

use std::sync::Arc;

use corral_backend::BackendError;
use corral_backend_memory::MemoryBackend;
use corral_contract::SandboxError;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::narrow::Narrow;

use crate::target::{ConformanceTarget, EgressFixture, Inventory, Target};
use crate::targets::inventory::backend_inventory;
use crate::targets::memory::memory_egress;

/// `Narrow<ContractAdapter<MemoryBackend>>` narrowed to the minimum
/// provider.
#[derive(Debug, Clone)]
pub struct MinimalTarget {
    backend: Arc<MemoryBackend>,
}

impl MinimalTarget {
    /// A target over a new, empty memory backend.
    pub fn new() -> Self {
        Self::over(Arc::new(MemoryBackend::new()))
    }

    /// A target over `backend`.
    pub fn over(backend: Arc<MemoryBackend>) -> Self {
        Self { backend }
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<MemoryBackend> {
        &self.backend
    }
}

impl Default for MinimalTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for MinimalTarget {
    fn name(&self) -> String {
        corral_registry::ConformanceTarget::Minimal.name().into()
    }
}

impl ConformanceTarget for MinimalTarget {
    type Provider = Narrow<ContractAdapter<MemoryBackend>>;

    fn provider(&self) -> Result<Self::Provider, SandboxError> {
        let inner = ContractAdapter::new(Arc::clone(&self.backend), envelopes::memory())?;
        Narrow::minimum(inner)
    }

    fn egress(&self) -> Option<EgressFixture> {
        Some(memory_egress())
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&*self.backend).await)
    }
}
