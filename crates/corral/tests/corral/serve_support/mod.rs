//! The real `corral serve --backend memory` on a free loopback port, as
//! the tests that talk to it start and stop it.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

/// A running `corral serve --backend memory`; SIGTERM (a graceful
/// shutdown) on drop unless [`Served::terminate`] ended it.
pub struct Served {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:PORT`, from its first line.
    pub endpoint: String,
    ended: bool,
}

impl Served {
    /// Starts it with the token in `token_file` and reads the address
    /// from its first line.
    pub fn memory(token_file: &Path) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--backend", "memory", "--listen", "127.0.0.1:0"])
            .arg("--token-file")
            .arg(token_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
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
