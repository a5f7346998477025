//! What the command-line hostile tests share: the real `corral` binary on a
//! private state directory, on the linux backend.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a sandbox's processes may take to go once its end was asked
/// for (its creator killed, or `corral gc` run).
pub const GONE_WITHIN: Duration = Duration::from_secs(5);

/// The `corral` binary on a private state directory; every sandbox made
/// with [`Cli::create`] is removed when it drops, and so is every linux
/// sandbox left in the state directory.
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

    /// Has the sandbox `id`, made by a front run on this state directory,
    /// removed at drop too (if it is still there then).
    pub fn adopt(&self, id: &str) {
        self.made.borrow_mut().push(id.to_string());
    }

    /// The linux backend's sandbox directories.
    pub fn sandboxes_dir(&self) -> PathBuf {
        self.state.path().join("linux/sandboxes")
    }

    /// A private state directory, or `None` (after printing `SKIP <test>:
    /// <reason>`) when this host cannot run the linux backend
    /// ([`linux_available`]). A host that can but fails is the test's
    /// failure, never a skip.
    pub fn linux(test: &str) -> Option<Cli> {
        linux_available(test).then(Cli::new)
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

    /// Runs `corral ARGS` with `input` on its stdin, then closed.
    pub fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        crate::cli::output_with_stdin(self.cmd(args), input)
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
        if self.sandboxes_dir().is_dir()
            && let Ok(b) = corral_backend_linux::LinuxBackend::open(self.state.path())
        {
            let _ = b.destroy_all();
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

/// The command name of host process `pid`.
pub fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Whether host process `pid` runs (exists and is not a zombie).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.get(s.rfind(')')? + 2..)?.starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// Waits up to [`GONE_WITHIN`] for every process in `procs` to end;
/// returns the ones still running after it.
pub fn left_after(procs: &[u32]) -> Vec<u32> {
    settles(GONE_WITHIN, || !procs.iter().any(|p| running(*p)));
    procs.iter().copied().filter(|p| running(*p)).collect()
}

/// Polls `done` every 20 ms for up to `within`; whether it came true.
pub fn settles(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `found` every 20 ms until it gives a value; after `within`
/// without one, the test fails naming `what` was awaited.
pub fn wait_for<T>(what: &str, within: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let mut value = None;
    let came = settles(within, || {
        value = found();
        value.is_some()
    });
    assert!(came, "no {what} after {within:?}");
    value.expect("settled with a value")
}

/// Sends signal `name` (`KILL`, `TERM`, …) to host process `pid`.
pub fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("spawn kill");
    assert!(sent.success(), "kill -{name} {pid}");
}
