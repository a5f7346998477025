//! The host side (issue 12, items 16 and 17): what `corral` itself spends
//! on a hostile sandbox or a flood of clients stays bounded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[path = "host_reads.rs"]
mod host_reads;
#[path = "serve_flood.rs"]
mod serve_flood;

/// The `corral` binary on a private state directory.
pub struct Cli {
    state: tempfile::TempDir,
}

impl Cli {
    /// A fresh state directory.
    pub fn new() -> Self {
        Cli {
            state: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The state directory.
    pub fn state(&self) -> &Path {
        self.state.path()
    }

    /// `corral ARGS` on this state directory, stdin closed.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
        c.args(args)
            .env("CORRAL_STATE_DIR", self.state.path())
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null());
        c
    }

    /// Runs `corral ARGS` to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("spawn corral")
    }
}

/// Whether linux sandboxes can run here (`corral-init` built next to
/// `corral`, and the backend available); prints `SKIP` when not.
pub fn linux_available(test: &str) -> bool {
    let init = PathBuf::from(env!("CARGO_BIN_EXE_corral")).with_file_name("corral-init");
    if !init.is_file() {
        println!("SKIP {test}: corral-init is not built next to corral");
        return false;
    }
    if let Err(why) = corral_backend_linux::LinuxBackend::available() {
        println!("SKIP {test}: {why}");
        return false;
    }
    true
}

/// The text of `b`.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
