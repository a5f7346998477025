//! The real `corral serve --backend memory` on a free loopback port (or
//! where and how a test asks), as the tests that talk to it start and stop
//! it.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};

/// A running `corral serve --backend memory`; SIGTERM (a graceful
/// shutdown) on drop unless [`Served::terminate`] ended it.
pub struct Served {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:PORT` (`https://` with TLS), from its first line.
    pub endpoint: String,
    /// Its stderr, when it was started with [`Served::memory_with`].
    pub stderr: Option<BufReader<ChildStderr>>,
    ended: bool,
}

impl Served {
    /// Starts it with the token in `token_file` and reads the address
    /// from its first line.
    pub fn memory(token_file: &Path) -> Served {
        Self::spawn(token_file, &["--listen", "127.0.0.1:0"], Stdio::null())
    }

    /// Starts it with the token in `token_file` and `args` (which name
    /// `--listen`), its stderr kept to be read, and reads the address from
    /// its first line.
    pub fn memory_with<S: AsRef<OsStr>>(token_file: &Path, args: &[S]) -> Served {
        Self::spawn(token_file, args, Stdio::piped())
    }

    fn spawn<S: AsRef<OsStr>>(token_file: &Path, args: &[S], stderr: Stdio) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--backend", "memory"])
            .args(args)
            .arg("--token-file")
            .arg(token_file)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().map(BufReader::new);
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let endpoint = first
            .trim()
            .strip_prefix("corral: serving memory on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        Served {
            child,
            stdout,
            endpoint,
            stderr,
            ended: false,
        }
    }

    /// Sends SIGTERM and waits: its exit status and what it printed after
    /// the first line.
    pub fn terminate(&mut self) -> (ExitStatus, String) {
        self.end_with("TERM")
    }

    /// Sends the signal named `signal` (as `kill -SIGNAL` spells it) and
    /// waits: its exit status and what it printed after the first line.
    pub fn end_with(&mut self, signal: &str) -> (ExitStatus, String) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        let exit = self.child.wait().unwrap();
        self.ended = true;
        (exit, rest)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if !self.ended {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            let _ = self.child.wait();
        }
    }
}
