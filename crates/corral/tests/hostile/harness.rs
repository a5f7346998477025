//! What the command-line hostile tests share: the real `corral` binary on a
//! private state directory, on the linux backend.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The `corral` binary on a private state directory; every sandbox made
/// with [`Cli::create`] is removed when it drops.
pub struct Cli {
    state: tempfile::TempDir,
    made: std::cell::RefCell<Vec<String>>,
}

impl Cli {
    /// A fresh private state directory, whether or not the linux backend
    /// runs here (see [`linux_available`]).
    pub fn new() -> Cli {
        Cli {
            state: tempfile::tempdir().expect("tempdir"),
            made: Default::default(),
        }
    }

    /// The state directory.
    pub fn state(&self) -> &std::path::Path {
        self.state.path()
    }

    /// A private state directory, or `None` (after printing `SKIP <test>:
    /// <reason>`) when this host cannot run the linux backend.
    pub fn linux(test: &str) -> Option<Cli> {
        let cli = Cli::new();
        let out = cli.run(&["run", "--backend", "linux", "--", "true"]);
        if !out.status.success() {
            println!(
                "SKIP {test}: the linux backend does not run here: {}",
                text(&out.stderr).trim()
            );
            return None;
        }
        Some(cli)
    }

    /// `corral ARGS` on the private state directory, stdin closed.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_corral"));
        c.args(args)
            .env("CORRAL_STATE_DIR", self.state.path())
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null());
        c
    }

    /// Runs `corral ARGS`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("spawn corral")
    }

    /// Runs `corral ARGS` with `input` on stdin.
    pub fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn corral");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
        child.wait_with_output().expect("corral exits")
    }

    /// A new linux sandbox's id.
    pub fn create(&self) -> String {
        let out = self.run(&["create", "--backend", "linux"]);
        assert!(out.status.success(), "create: {}", text(&out.stderr));
        let id = text(&out.stdout).trim().to_string();
        self.made.borrow_mut().push(id.clone());
        id
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        for id in self.made.take() {
            let _ = self.run(&["rm", &id]);
        }
    }
}

/// Whether linux sandboxes can run here (`corral-init` built next to
/// `corral`, and the backend available); prints `SKIP` when not.
pub fn linux_available(test: &str) -> bool {
    let corral = std::path::Path::new(env!("CARGO_BIN_EXE_corral"));
    if !corral.with_file_name("corral-init").is_file() {
        println!("SKIP {test}: corral-init is not built next to corral");
        return false;
    }
    if let Err(why) = corral_backend_linux::LinuxBackend::available() {
        println!("SKIP {test}: {why}");
        return false;
    }
    true
}

/// Bytes as text, lossily.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
