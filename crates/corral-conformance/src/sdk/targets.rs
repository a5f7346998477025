//! The in-tree targets as SDK targets, each with the checks it declares it
//! cannot pass and why.
//!
//! | target | live | declared unsupported |
//! |---|---|---|
//! | `memory` | no | `gitPush` (its simulated shell has no git), `httpProbe` (its previews are `memory://` URLs) |
//! | `local` | no | `gitPush` / `httpProbe` only where this host lacks `git` / `python3` |
//! | `linux` | yes | likewise (its sandboxes run the host's programs), and `previews` where the backend declares none |
//!
//! The `minimal` target narrows a *contract* provider to the contract's
//! minimum; the SDK suite runs on backends, so it has no SDK target.

use std::sync::Arc;

use corral_backend::Backend;

use crate::sdk::options::{Check, SdkConformanceOptions};
use crate::sdk::report::SdkReport;
use crate::sdk::runner::{SdkConformanceError, run_sdk_target};
use crate::sdk::target::{SdkTarget, host_has_program};
use crate::targets::{BuiltinTarget, DockerTarget, LinuxTarget, LocalTarget, MemoryTarget};

/// `options` with `gitPush` and `httpProbe` declared unsupported where this
/// host lacks `git` or `python3`, for backends whose sandboxes run the
/// host's programs.
fn host_programs(mut options: SdkConformanceOptions, backend: &str) -> SdkConformanceOptions {
    if !host_has_program("git") {
        options = options.skip(
            Check::GitPush,
            format!("git is not installed on this host, whose programs {backend} sandboxes run"),
        );
    }
    if !host_has_program("python3") {
        options = options.skip(
            Check::HttpProbe,
            format!(
                "python3 is not installed on this host, so no HTTP server can run in a {backend} sandbox"
            ),
        );
    }
    options
}

impl SdkTarget for MemoryTarget {
    fn name(&self) -> String {
        "memory".into()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(MemoryTarget::backend(self)) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        SdkConformanceOptions::offline()
            .skip(
                Check::GitPush,
                "the memory backend's simulated shell has no git",
            )
            .skip(
                Check::HttpProbe,
                "the memory backend's previews are simulated: memory:// URLs no HTTP client can reach",
            )
    }
}

impl SdkTarget for LocalTarget {
    fn name(&self) -> String {
        "local".into()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(LocalTarget::backend(self)) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        host_programs(SdkConformanceOptions::offline(), "local")
    }
}

impl SdkTarget for LinuxTarget {
    fn name(&self) -> String {
        "linux".into()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(LinuxTarget::backend(self)) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        let mut options = host_programs(SdkConformanceOptions::live(), "linux");
        if !LinuxTarget::backend(self).capabilities().previews {
            options = options.skip(Check::Previews, "this linux backend publishes no ports");
        }
        options
    }
}

/// The docker target runs live on a real engine, in the busybox-and-curl
/// test image: no git there, and no live processes in the backend; its
/// HTTP server is busybox's `httpd`, reached through the published port.
impl SdkTarget for DockerTarget {
    fn name(&self) -> String {
        "docker".into()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(DockerTarget::backend(self)) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        SdkConformanceOptions::live().skip(
            Check::GitPush,
            "the docker test image (busybox and curl, imported without a registry) has no git",
        )
    }

    fn http_server(&self, port: u16) -> corral_backend::Command {
        corral_backend::Command::argv([
            "httpd".to_string(),
            "-f".to_string(),
            "-p".to_string(),
            port.to_string(),
            "-h".to_string(),
            "/workspace".to_string(),
        ])
    }
}

/// Another target's sandboxes reached through a different backend — a
/// `remote` backend over the `corral serve` that hosts the target — held
/// to exactly the checks the served target declares it can pass: the hop
/// may cost nothing the SDK can see. The run is live: a backend named
/// `remote` may reach real infrastructure, whatever it relays to.
pub struct Relayed<T> {
    /// The name reports show, e.g. `remote (linux)`.
    pub name: String,
    /// The backend the cases use.
    pub backend: Arc<dyn Backend>,
    /// The target whose sandboxes `backend` reaches.
    pub served: T,
}

impl<T: SdkTarget> SdkTarget for Relayed<T> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend)
    }

    fn options(&self) -> SdkConformanceOptions {
        SdkConformanceOptions {
            live: true,
            ..self.served.options()
        }
    }

    fn http_server(&self, port: u16) -> corral_backend::Command {
        self.served.http_server(port)
    }
}

impl BuiltinTarget {
    /// The target as an SDK target; `None` for `minimal`, which narrows a
    /// contract provider and has no backend of its own to run the SDK on.
    pub fn sdk(&self) -> Option<&dyn SdkTarget> {
        match self {
            Self::Memory(t) => Some(t),
            Self::Local(t) => Some(t),
            Self::Linux(t) => Some(t),
            Self::Docker(t) => Some(t),
            Self::Minimal(_) => None,
        }
    }

    /// Runs the SDK suite against the target with the options it declares;
    /// `None` for `minimal` (see [`Self::sdk`]).
    pub async fn run_sdk(&self) -> Option<Result<SdkReport, SdkConformanceError>> {
        match self.sdk() {
            Some(target) => Some(run_sdk_target(target).await),
            None => None,
        }
    }
}
