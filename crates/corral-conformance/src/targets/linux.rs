//! The `linux` target: the contract adapter over corral's own linux backend
//! (namespaces, a pivoted root, cgroups), with the envelope it declares on
//! this host, in a temporary state directory. Every sandbox left behind is
//! destroyed (with its mounts, cgroup and processes) before the directory is
//! removed, when the target is dropped.
//!
//! Its egress fixture is two HTTP test servers the sandbox could reach only
//! through a leak or an allowlist. Where the backend enforces no allowlist
//! (that case is then a recorded skip) they listen on the host's loopback:
//! a `none` sandbox has a loopback of its own, so reaching either would
//! prove its namespace leaks. Where it enforces allowlists they are two
//! test hosts in network namespaces the target makes
//! (`corral_testkit::testhost`): private addresses on this machine's
//! own veths, deleted when the target is dropped. Nothing beyond this
//! machine is probed.

use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, BackendError};
use corral_backend_linux::LinuxBackend;
use corral_contract::SandboxError;
use corral_registry::{BackendKind, envelopes};
use corral_runtime::adapter::ContractAdapter;
use corral_testkit::testhost::{TestHost, TestHostError};
use tempfile::TempDir;

use crate::sdk::SdkConformanceOptions;
use crate::target::{ConformanceTarget, EgressFixture, Inventory, SdkTarget, Target};
use crate::targets::declared::declared;
use crate::targets::inventory::backend_inventory;
use crate::targets::loopback::{LoopbackServer, curl_fixture};

/// `ContractAdapter<LinuxBackend>` with `envelopes::linux_for` its capabilities on this host.
#[derive(Debug)]
pub struct LinuxTarget {
    backend: Arc<LinuxBackend>,
    state: Option<TempDir>,
    servers: Servers,
}

/// Where the egress fixture's two servers listen.
#[derive(Debug)]
enum Servers {
    /// On the host's loopback (the backend enforces no allowlist).
    Loopback([LoopbackServer; 2]),
    /// On two test hosts in network namespaces the target made (the backend
    /// enforces allowlists).
    Hosts(Box<[TestHost; 2]>),
}

/// The port the test hosts serve on.
const TEST_HOST_PORT: u16 = 8080;

impl Servers {
    fn addresses(&self) -> [String; 2] {
        match self {
            Servers::Loopback([a, b]) => [a.address(), b.address()],
            Servers::Hosts(hosts) => {
                let [a, b] = &**hosts;
                [a, b].map(|h| format!("{}:{TEST_HOST_PORT}", h.addr()))
            }
        }
    }
}

fn test_host() -> Result<TestHost, LinuxTargetError> {
    let mut host = TestHost::new().map_err(LinuxTargetError::TestHost)?;
    host.serve(TEST_HOST_PORT, "ok\n")
        .map_err(LinuxTargetError::TestHost)?;
    Ok(host)
}

/// Why the linux target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LinuxTargetError {
    /// This host cannot make linux sandboxes (the reason says why).
    #[error("linux sandboxes are unavailable here: {0}")]
    Unavailable(String),
    /// The temporary state directory could not be created.
    #[error("creating a temporary state directory: {0}")]
    StateDir(#[source] std::io::Error),
    /// The linux backend refused the state directory.
    #[error("opening the linux backend: {0}")]
    Backend(#[source] BackendError),
    /// A loopback test server of the egress fixture could not start.
    #[error("starting the egress fixture: {0}")]
    Server(#[source] std::io::Error),
    /// A test host of the egress fixture could not be made.
    #[error("starting the egress fixture: {0}")]
    TestHost(#[source] TestHostError),
}

impl LinuxTarget {
    /// A target on a new temporary state directory; `Unavailable` where
    /// `LinuxBackend::available()` fails.
    pub fn new() -> Result<Self, LinuxTargetError> {
        LinuxBackend::available().map_err(LinuxTargetError::Unavailable)?;
        let state = tempfile::Builder::new()
            .prefix("corral-conformance-")
            .tempdir()
            .map_err(LinuxTargetError::StateDir)?;
        let backend = LinuxBackend::open(state.path()).map_err(LinuxTargetError::Backend)?;
        let servers = if backend.capabilities().enforces.network_allowlist {
            Servers::Hosts(Box::new([test_host()?, test_host()?]))
        } else {
            Servers::Loopback(LoopbackServer::pair().map_err(LinuxTargetError::Server)?)
        };
        Ok(Self {
            backend: Arc::new(backend),
            state: Some(state),
            servers,
        })
    }

    /// The temporary state directory (removed on drop).
    pub fn state_dir(&self) -> &Path {
        self.state.as_ref().map_or(Path::new(""), |s| s.path())
    }

    /// The backend every provider of this target shares.
    pub fn backend(&self) -> &Arc<LinuxBackend> {
        &self.backend
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
        ContractAdapter::new(
            Arc::clone(&self.backend),
            envelopes::linux_for(&self.backend.capabilities()),
        )
    }

    fn egress(&self) -> Option<EgressFixture> {
        curl_fixture(self.servers.addresses())
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&*self.backend).await)
    }
}

impl SdkTarget for LinuxTarget {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared(
            Some(BackendKind::Linux),
            self.backend.capabilities().previews,
        )
    }
}
