//! The `linux` target: the contract adapter over corral's own linux backend
//! (namespaces, a pivoted root, cgroups), with the envelope it declares on
//! this host, in a temporary state directory. Every sandbox left behind is
//! destroyed (with its mounts, cgroup and processes) before the directory is
//! removed, when the target is dropped.
//!
//! Its `network-none` fixture is two HTTP servers on the host's loopback: a
//! `none` sandbox has a loopback of its own, so reaching either would prove
//! its namespace leaks. The allowlist case needs destinations an allowlisted
//! sandbox can route to, which the host's loopback is not: the caller names
//! them ([`LinuxTarget::with_allowlist_egress`]; `corral conformance` takes
//! `--egress-allowed`/`--egress-denied`), and without them that case is a
//! recorded skip saying so. The target makes nothing on the host's network
//! beyond its two loopback servers, and probes nothing beyond what it is
//! given.

use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, BackendError, Verified};
use corral_backend_linux::LinuxBackend;
use corral_contract::SandboxError;
use corral_registry::{BackendKind, OpenError, Scratch, adapter};
use corral_runtime::adapter::ContractAdapter;
use tempfile::TempDir;

use crate::sdk::SdkConformanceOptions;
use crate::target::{ConformanceTarget, EgressFixture, Inventory, SdkTarget, Target};
use crate::targets::declared::declared;
use crate::targets::inventory::backend_inventory;
use crate::targets::loopback::{LoopbackServer, curl_fixture};

/// `ContractAdapter<LinuxBackend>` with `envelopes::linux_for` its capabilities on this host.
#[derive(Debug)]
pub struct LinuxTarget {
    backend: Verified<Arc<LinuxBackend>>,
    state: Option<TempDir>,
    loopback: [LoopbackServer; 2],
    allowlist: Option<EgressFixture>,
}

/// Why the linux target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LinuxTargetError {
    /// This host cannot make linux sandboxes (the reason says why).
    #[error("linux sandboxes are unavailable here: {0}")]
    Unavailable(String),
    /// The registry could not open the backend on a temporary state
    /// directory.
    #[error("opening the linux backend: {0}")]
    Open(#[source] OpenError),
    /// A loopback test server of the egress fixture could not start.
    #[error("starting the egress fixture: {0}")]
    Server(#[source] std::io::Error),
}

impl LinuxTarget {
    /// A target on a new temporary state directory, the backend opened
    /// (and verified) by the registry's scratch opener; `Unavailable` where
    /// this host cannot make linux sandboxes. It has no allowlist fixture
    /// until it is given one.
    pub fn new() -> Result<Self, LinuxTargetError> {
        let (backend, state) = Scratch::linux().map_err(|e| match e {
            OpenError::Unavailable { why, .. } => LinuxTargetError::Unavailable(why),
            e => LinuxTargetError::Open(e),
        })?;
        let loopback = LoopbackServer::pair().map_err(LinuxTargetError::Server)?;
        Ok(Self {
            backend: backend.into_shared(),
            state: Some(state),
            loopback,
            allowlist: None,
        })
    }

    /// The target, its allowlist case probing `fixture`: `allowed` must be
    /// a destination a sandbox of this backend can route to (a host in a
    /// network namespace joined to this one, say), `denied` one it could
    /// route to but must not reach.
    pub fn with_allowlist_egress(mut self, fixture: EgressFixture) -> Self {
        self.give_allowlist_egress(fixture);
        self
    }

    /// [`Self::with_allowlist_egress`] on a target already held.
    pub fn give_allowlist_egress(&mut self, fixture: EgressFixture) {
        self.allowlist = Some(fixture);
    }

    /// The temporary state directory (removed on drop).
    pub fn state_dir(&self) -> &Path {
        self.state.as_ref().map_or(Path::new(""), |s| s.path())
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<LinuxBackend> {
        self.backend.get()
    }
}

impl Drop for LinuxTarget {
    fn drop(&mut self) {
        // Sandboxes hold mounts inside the state directory: unmount first.
        let _ = self.backend.destroy_all();
        drop(self.state.take());
    }
}

impl Target for LinuxTarget {
    fn name(&self) -> String {
        corral_registry::ConformanceTarget::Linux.name().into()
    }
}

impl ConformanceTarget for LinuxTarget {
    type Provider = ContractAdapter<LinuxBackend>;

    fn provider(&self) -> Result<Self::Provider, SandboxError> {
        adapter(&self.backend)
    }

    fn egress(&self) -> Option<EgressFixture> {
        curl_fixture(self.loopback.each_ref().map(LoopbackServer::address))
    }

    fn allowlist_egress(&self) -> Option<EgressFixture> {
        self.allowlist.clone()
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&**self.backend.get()).await)
    }
}

impl SdkTarget for LinuxTarget {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(self.backend.get()) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared(
            Some(BackendKind::Linux),
            self.backend.capabilities().previews,
        )
    }
}
