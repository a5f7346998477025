//! What the SDK suite runs against: an [`SdkTarget`], a backend with the
//! options its runtime is checked with.

use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, Command, DEFAULT_PATH};

use crate::sdk::options::SdkConformanceOptions;

/// A backend the SDK suite can be run against.
pub trait SdkTarget: Send + Sync {
    /// The target's name, as reports show it.
    fn name(&self) -> String;

    /// The backend every case builds its sandboxes on.
    fn backend(&self) -> Arc<dyn Backend>;

    /// The options this target runs with: `live` as its provider requires,
    /// and the checks it cannot pass, each with its reason. Only what truly
    /// cannot pass is declared: a skip of something that should work is a
    /// defect of the target.
    fn options(&self) -> SdkConformanceOptions;

    /// The command, run in the sandbox with `/workspace` as its working
    /// directory, that serves that directory over HTTP on `port` for the
    /// `http-probe` case. The default is Python's `http.server` bound to
    /// the loopback, for runtimes whose previews reach the sandbox's
    /// loopback.
    fn http_server(&self, port: u16) -> Command {
        python_http_server(port)
    }
}

/// `python3 -m http.server PORT --bind 127.0.0.1`: the `http-probe` case's
/// server unless a target names another.
pub fn python_http_server(port: u16) -> Command {
    Command::argv([
        "python3".to_string(),
        "-m".to_string(),
        "http.server".to_string(),
        port.to_string(),
        "--bind".to_string(),
        "127.0.0.1".to_string(),
    ])
}

/// Whether an executable `program` is in one of the directories of the
/// `PATH` every backend gives commands ([`DEFAULT_PATH`]), on this host.
/// Backends whose sandboxes see the host's programs (local, linux with the
/// host image) use it to decide, honestly, whether a check needing that
/// program can run.
pub fn host_has_program(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    DEFAULT_PATH.split(':').any(|dir| {
        std::fs::metadata(Path::new(dir).join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_the_default_path_only() {
        assert!(host_has_program("sh"), "every host has /bin/sh");
        assert!(!host_has_program("corral-no-such-program"));
        assert!(!host_has_program("../bin/sh/nothing"));
    }
}
