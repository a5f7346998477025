//! Host process rows: the floor (`fork+exec /bin/true`), `unshare` of five
//! namespaces, `bwrap`, and the whole command line's path, `corral run --
//! /bin/true` (its own process start, the backend's opening, create, exec
//! and destroy), on a state directory of its own.
//!
//! Each iteration runs the program with `std::process::Command` and waits for
//! it **on the calling thread**: the bench runs one thing at a time, and a hop
//! to a blocking thread would add its own cost to the floor.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::error::BenchError;
use crate::host::{effective_uid, find_program};
use crate::measure::{BoxFuture, Group, Measure, Role, Setup};

/// Runs one program to completion per iteration.
#[derive(Debug)]
pub struct ProcessMeasure {
    name: String,
    role: Role,
    argv: Vec<String>,
    needs_root: bool,
    default_iterations: u32,
    program: Option<PathBuf>,
    /// The program, where it is not looked up on `PATH` (`corral` itself).
    given: Option<PathBuf>,
    /// A state directory of its own (`CORRAL_STATE_DIR`), made at setup
    /// and removed at teardown, for rows that keep state.
    own_state: bool,
    state: Option<tempfile::TempDir>,
}

impl ProcessMeasure {
    /// `fork+exec /bin/true`: the floor of the start group.
    pub fn fork_exec() -> Self {
        Self::new(
            "fork+exec /bin/true",
            Role::Floor,
            &["/bin/true"],
            false,
            500,
        )
    }

    /// `unshare --mount --uts --ipc --net --pid --fork /bin/true` (root only).
    pub fn unshare() -> Self {
        Self::new(
            "unshare 5 namespaces",
            Role::Compared,
            &[
                "unshare",
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--fork",
                "/bin/true",
            ],
            true,
            100,
        )
    }

    /// `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true`.
    pub fn bwrap() -> Self {
        Self::new(
            "bwrap --unshare-all",
            Role::Compared,
            &[
                "bwrap",
                "--unshare-all",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "/bin/true",
            ],
            false,
            100,
        )
    }

    /// `corral run -- /bin/true` with the `corral` binary `corral` (the
    /// default backend, on a state directory of its own): the whole path
    /// a person's command takes, beside `bwrap`'s. `None`: a skip.
    pub fn corral_run(corral: Option<PathBuf>) -> Self {
        let mut m = Self::new(
            "corral run -- /bin/true (the whole CLI)",
            Role::Compared,
            &["corral", "run", "--", "/bin/true"],
            false,
            100,
        );
        m.given = corral;
        m.own_state = true;
        m
    }

    fn new(name: &str, role: Role, argv: &[&str], needs_root: bool, iterations: u32) -> Self {
        ProcessMeasure {
            name: name.into(),
            role,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            needs_root,
            default_iterations: iterations,
            program: None,
            given: None,
            own_state: false,
            state: None,
        }
    }

    fn command_line(&self) -> String {
        self.argv.join(" ")
    }

    /// Runs the program once; `Err` carries the first line of its stderr.
    fn run_once(&self, program: &PathBuf, capture: bool) -> Result<(), BenchError> {
        let mut cmd = Command::new(program);
        cmd.args(&self.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some(state) = &self.state {
            cmd.env("CORRAL_STATE_DIR", state.path());
        }
        let (status, stderr) = if capture {
            let out = cmd
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| BenchError::io(format!("starting {}", self.argv[0]), e))?;
            (
                out.status,
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        } else {
            let status = cmd
                .stderr(Stdio::null())
                .status()
                .map_err(|e| BenchError::io(format!("starting {}", self.argv[0]), e))?;
            (status, String::new())
        };
        if status.success() {
            return Ok(());
        }
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        Err(BenchError::CommandFailed {
            command: self.command_line(),
            status: if first.is_empty() {
                status.to_string()
            } else {
                format!("{status}: {}", first.trim())
            },
        })
    }
}

impl Measure for ProcessMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::Start
    }

    fn role(&self) -> Role {
        self.role
    }

    fn default_iterations(&self) -> u32 {
        self.default_iterations
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            if self.needs_root && effective_uid() != Some(0) {
                return Ok(Setup::Skip(format!("{} needs root", self.argv[0])));
            }
            let Some(program) = self.given.clone().or_else(|| find_program(&self.argv[0])) else {
                return Ok(Setup::Skip(format!("{} not found on PATH", self.argv[0])));
            };
            if self.own_state {
                self.state = Some(
                    tempfile::tempdir()
                        .map_err(|e| BenchError::io("creating a temporary state directory", e))?,
                );
            }
            // One probe run: a kernel or a policy refusing it is a skip with its reason.
            if let Err(e) = self.run_once(&program, true) {
                return Ok(Setup::Skip(format!("cannot run here: {e}")));
            }
            self.program = Some(program);
            Ok(Setup::Ready)
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let program = self.program.clone().ok_or_else(|| {
                BenchError::io(self.name.clone(), "iteration before a successful setup")
            })?;
            self.run_once(&program, false)
        })
    }

    fn note(&self) -> Option<String> {
        Some(self.command_line())
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            self.program = None;
            match self.state.take() {
                Some(state) => state
                    .close()
                    .map_err(|e| BenchError::io("removing the temporary state directory", e)),
                None => Ok(()),
            }
        })
    }
}
