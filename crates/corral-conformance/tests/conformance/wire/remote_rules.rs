//! The SDK specification's backend rules ("Rules an adapter must follow"),
//! run against a `RemoteBackend` whose server serves the memory backend:
//! every rule holds across the network hop — stdin closed unless given,
//! chunks in arrival order, the process group dead before a timeout or an
//! abort settles, whole and ranged reads, fail-closed creates, idempotent
//! destroy, and only declared members.

use super::common;
use std::sync::Arc;

use corral_backend_memory::MemoryBackend;
use corral_registry::envelopes;

corral_backend::backend_rules!(|| {
    let (remote, server) =
        common::remote_over_blocking(Arc::new(MemoryBackend::new()), envelopes::memory());
    corral_backend::rules::Subject::new(Arc::new(remote)).with_guard(server)
});
