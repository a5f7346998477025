//! The in-tree targets as SDK targets, each with the checks it declares it
//! cannot pass and why.
//!
//! | target | live | declared unsupported |
//! |---|---|---|
//! | `memory` | no | `gitPush` (its simulated shell has no git), `httpProbe` (its previews are `memory://` URLs) |
//! | `local` | no | `gitPush` / `httpProbe` only where this host lacks `git` / `python3` |
//! | `linux` | yes | likewise (its sandboxes run the host's programs), and `previews` where the backend declares none |
//! | `docker` | yes | `gitPush` (the test image has no git) |
//! | `remote` ([`Relayed`]) | yes | what the served backend's target declares |
//!
//! The `minimal` target narrows a *contract* provider to the contract's
//! minimum; the SDK suite runs on backends, so it has no SDK target.

use std::sync::Arc;

use corral_backend::{Backend, Command};

use crate::sdk::SdkReport;
use crate::sdk::options::{Check, SdkConformanceOptions};
use crate::sdk::runner::{SdkConformanceError, run_sdk_target};
use crate::sdk::target::{SdkTarget, host_has_program, python_http_server};
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

/// What each in-tree backend declares, by name — the one place, shared by
/// the built-in targets and by [`Relayed`]. `previews` is whether the
/// backend publishes ports (linux may not).
fn declared(backend: &str, previews: bool) -> SdkConformanceOptions {
    match backend {
        "memory" => SdkConformanceOptions::offline()
            .skip(
                Check::GitPush,
                "the memory backend's simulated shell has no git",
            )
            .skip(
                Check::HttpProbe,
                "the memory backend's previews are simulated: memory:// URLs no HTTP client can reach",
            ),
        "local" => host_programs(SdkConformanceOptions::offline(), "local"),
        "linux" => {
            let options = host_programs(SdkConformanceOptions::live(), "linux");
            if previews {
                options
            } else {
                options.skip(Check::Previews, "this linux backend publishes no ports")
            }
        }
        "docker" => SdkConformanceOptions::live().skip(
            Check::GitPush,
            "the docker test image (busybox and curl, imported without a registry) has no git",
        ),
        // A backend this build does not know declares nothing: every
        // check runs, live.
        _ => SdkConformanceOptions::live(),
    }
}

/// The `http-probe` server for sandboxes of `backend`: busybox's `httpd`
/// in the docker test image, Python's elsewhere.
fn http_server_on(backend: &str, port: u16) -> Command {
    if backend == "docker" {
        Command::argv([
            "httpd".to_string(),
            "-f".to_string(),
            "-p".to_string(),
            port.to_string(),
            "-h".to_string(),
            "/workspace".to_string(),
        ])
    } else {
        python_http_server(port)
    }
}

impl SdkTarget for MemoryTarget {
    fn name(&self) -> String {
        "memory".into()
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(MemoryTarget::backend(self)) as Arc<dyn Backend>
    }

    fn options(&self) -> SdkConformanceOptions {
        declared("memory", true)
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
        declared("local", true)
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
        declared("linux", LinuxTarget::backend(self).capabilities().previews)
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
        declared("docker", true)
    }

    fn http_server(&self, port: u16) -> Command {
        http_server_on("docker", port)
    }
}

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

impl SdkTarget for Relayed {
    fn name(&self) -> String {
        format!("{} ({})", self.backend.name(), self.served)
    }

    fn backend(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend)
    }

    fn options(&self) -> SdkConformanceOptions {
        let previews = self.backend.capabilities().previews;
        SdkConformanceOptions {
            live: true,
            ..declared(&self.served, previews)
        }
    }

    fn http_server(&self, port: u16) -> Command {
        http_server_on(&self.served, port)
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
