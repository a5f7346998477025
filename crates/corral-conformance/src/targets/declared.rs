//! What each in-tree backend declares it cannot pass through the SDK, by
//! name — the one table, shared by the built-in targets and by
//! [`Relayed`](crate::targets::Relayed); the targets' module documentation
//! shows it.

use corral_backend::Command;

use crate::sdk::{Check, SdkConformanceOptions};
use crate::target::{host_has_program, python_http_server};

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
pub(crate) fn declared(backend: &str, previews: bool) -> SdkConformanceOptions {
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
pub(crate) fn http_server_on(backend: &str, port: u16) -> Command {
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
