//! The SDK suite on the `remote` backend: a `RemoteBackend` over a server
//! on this machine's loopback that serves the memory backend, and one
//! that serves the linux backend (skipped with the reason where this host
//! cannot make linux sandboxes). Nothing fails, the only skips are the
//! ones the served target declares, and nothing is left behind.

use crate::common;
use std::sync::Arc;

use common::{assert_passes_with_only_declared_skips, linux_target_or_skip};
use corral_backend::Backend;
use corral_conformance::SdkTarget;
use corral_conformance::targets::MemoryTarget;
use corral_conformance::targets::Relayed;
use corral_contract::SandboxProviderCapabilities;
use corral_registry::envelopes;
use corral_wire::RunningServer;

/// Serves `backend` (contract and primitives) and relays its checks
/// through a remote backend connected to it.
async fn relayed<B: Backend + 'static>(
    backend: Arc<B>,
    envelope: SandboxProviderCapabilities,
) -> (Relayed, RunningServer) {
    let (remote, server) = crate::wire::common::remote_over(backend, envelope).await;
    let served = remote.served().to_owned();
    let target = Relayed::new(Arc::new(remote), served);
    (target, server)
}

// SDK spec, "Conformance": the suite runs against any provider's
// primitives; `live` for one that may reach real infrastructure — a
// remote backend is one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_backend_over_memory_passes_with_only_the_declared_skips() {
    let memory = MemoryTarget::new();
    let backend = Arc::clone(memory.backend());
    let (target, server) = relayed(backend, envelopes::memory()).await;
    assert!(target.options().live, "a remote backend runs only live");
    assert_eq!(target.options().unsupported, memory.options().unsupported);
    assert_passes_with_only_declared_skips(&target).await;
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remote_backend_over_linux_passes_with_only_the_declared_skips() {
    let Some((linux, _hosts)) = linux_target_or_skip("the SDK suite on remote (linux)") else {
        return;
    };
    let backend = Arc::clone(linux.backend());
    let envelope = envelopes::linux_for(&backend.capabilities());
    let (target, server) = relayed(backend, envelope).await;
    assert_eq!(target.options().unsupported, linux.options().unsupported);
    assert_passes_with_only_declared_skips(&target).await;
    server.shut_down().await;
}
