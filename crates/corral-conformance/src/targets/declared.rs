//! What each in-tree backend declares it cannot pass through the SDK, by
//! name — the one table, shared by the built-in targets and by
//! [`Relayed`](crate::targets::Relayed); the targets' module documentation
//! shows it.

use corral_backend::Command;
use corral_registry::BackendKind;

use crate::sdk::{Check, SdkConformanceOptions};
use crate::target::{host_has_program, python_http_server};

/// `options` with `gitPush` and `httpProbe` declared unsupported where this
/// host lacks `git` or `python3`, for backends whose sandboxes run the
/// host's programs.
fn host_programs(
    mut options: SdkConformanceOptions,
    backend: BackendKind,
) -> SdkConformanceOptions {
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

/// What each in-tree backend declares — the one place, shared by the
/// built-in targets and by [`Relayed`], which names its served backend
/// (`None` when this build does not know it). `previews` is whether the
/// backend publishes ports (linux may not).
pub(crate) fn declared(backend: Option<BackendKind>, previews: bool) -> SdkConformanceOptions {
    let Some(backend) = backend else {
        // A backend this build does not know declares nothing: every
        // check runs, live.
        return SdkConformanceOptions::live();
    };
    match backend {
        BackendKind::Memory => SdkConformanceOptions::offline()
            .skip(
                Check::GitPush,
                "the memory backend's simulated shell has no git",
            )
            .skip(
                Check::HttpProbe,
                "the memory backend's previews are simulated: memory:// URLs no HTTP client can reach",
            ),
        BackendKind::Local => host_programs(SdkConformanceOptions::offline(), backend),
        BackendKind::Linux => {
            let options = host_programs(SdkConformanceOptions::live(), backend);
            if previews {
                options
            } else {
                options.skip(Check::Previews, "this linux backend publishes no ports")
            }
        }
        BackendKind::Docker => SdkConformanceOptions::live().skip(
            Check::GitPush,
            "the docker test image (busybox and curl, imported without a registry) has no git",
        ),
    }
}

/// The `http-probe` server for sandboxes of `backend`: busybox's `httpd`
/// in the docker test image, Python's elsewhere (and for a backend this
/// build does not know).
pub(crate) fn http_server_on(backend: Option<BackendKind>, port: u16) -> Command {
    if backend == Some(BackendKind::Docker) {
        Command::argv([
            "httpd".to_string(),
            "-f".to_string(),
            "-p".to_string(),
            port.to_string(),
            "-h".to_string(),
            "/workspace".to_string(),
        ])
        .expect("a fixed, valid command")
    } else {
        python_http_server(port)
    }
}
