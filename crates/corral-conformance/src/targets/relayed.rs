//! The `remote` target: a backend that reaches another backend's
//! sandboxes, held to what the served backend declares.

use std::sync::Arc;

use corral_backend::{Backend, Command};
use corral_registry::BackendKind;

use crate::sdk::SdkConformanceOptions;
use crate::target::{SdkTarget, Target};
use crate::targets::declared::{declared, http_server_on};

/// A backend that reaches another backend's sandboxes — the `remote`
/// backend over the `corral serve` hosting that backend — held to exactly
/// the checks the served backend's target declares it can pass: the hop
/// may cost nothing the SDK can see. The run is live: a backend named
/// `remote` may reach real infrastructure, whatever it relays to. Where a
/// served backend's declarations depend on its host's programs (`git`,
/// `python3`), they are judged on this machine, which is exact when the
/// server runs here; elsewhere a missing program fails its check rather
/// than hiding.
pub struct Relayed {
    backend: Arc<dyn Backend>,
    served: String,
}

impl Relayed {
    /// `backend`, reaching sandboxes of the backend called `served`.
    pub fn new(backend: Arc<dyn Backend>, served: impl Into<String>) -> Self {
        Self {
            backend,
            served: served.into(),
        }
    }
}

impl Relayed {
    /// The in-tree backend the served one is, when this build knows its
    /// name.
    fn served_kind(&self) -> Option<BackendKind> {
        BackendKind::from_name(&self.served)
    }
}

impl Target for Relayed {
    fn name(&self) -> String {
        format!("{} ({})", self.backend.name(), self.served)
    }
}

impl SdkTarget for Relayed {
    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend)
    }

    fn options(&self) -> SdkConformanceOptions {
        let previews = self.backend.capabilities().previews;
        SdkConformanceOptions {
            live: true,
            ..declared(self.served_kind(), previews)
        }
    }

    fn http_server(&self, port: u16) -> Command {
        http_server_on(self.served_kind(), port)
    }
}
