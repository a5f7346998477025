//! `sandbox.processes()`: background processes that outlive the call (and
//! the program) that started them, their logs, and readiness checks — built
//! once from `exec` and the file primitives, so every backend that can run
//! `sh` and `setsid` has them.
//!
//! # The control directory
//!
//! The SDK owns `/.corral` in every sandbox. Process `NAME` keeps its
//! record under `/.corral/procs/NAME/`:
//!
//! | file | written by | holds |
//! |---|---|---|
//! | `spec.json` | `start` | what was started ([`ProcessRecord`]) |
//! | `pid` | the wrapper, first thing | its pid, which is also its process group id |
//! | `stdout`, `stderr` | the process | its output, appended as it runs |
//! | `exit` | the wrapper when the command ends, or `kill` | `CODE` or `signal NAME` |
//!
//! # How a process starts
//!
//! A path inside a command is not always the sandbox path the file
//! primitives use (the `local` backend runs host processes with only the
//! working directory mapped). So `start` first creates the record with file
//! calls; the first start on a handle then runs `pwd -P` in
//! `/.corral/procs` to learn that path *as commands see it* (the handle
//! keeps it), and every path goes into the wrapper script in that form.
//! It then runs, in the caller's working directory and environment:
//!
//! ```text
//! setsid sh -c 'echo $$ > DIR/pid; sh -c JOB corral-proc ARGV… &'
//! JOB = "$@" > DIR/stdout 2> DIR/stderr < /dev/null; c=$?;
//!       rm -f ACTIVITY; echo $c > DIR/exit
//! ```
//!
//! (`ACTIVITY` is the process's activity record, removed before the `exit`
//! record appears.)
//!
//! `setsid` runs in the foreground and makes a new session (and process
//! group) before the exec's shell exits, so the backend's kill of the
//! exec's group (when its leader exits) cannot race it. The session's first
//! shell records its pid — the new group's id — starts the job in the
//! background in that group, and exits; the job outlives the exec and the
//! program that started it.
//!
//! # Liveness, kill, wait
//!
//! A process has ended when its `exit` record exists. Otherwise it runs
//! while its group has a member that is not a zombie: `kill -0 -PGID`,
//! and, where the sandbox has `/proc`, a scan of `/proc/*/stat` (an orphan
//! whose reaper does not reap stays a zombie, and `kill -0` counts
//! zombies). A group gone without an `exit` record was killed from outside
//! the SDK: its state is [`ProcessState::Lost`]. `kill` sends `SIGTERM` to
//! the whole group, `SIGKILL` after a grace period, and writes the `exit`
//! record (`signal SIGTERM` or `signal SIGKILL`) when the wrapper could not.
//! `wait` polls the record.
//!
//! While a process runs, an activity record
//! `/.corral/activity/proc-NAME` makes garbage collection spare the
//! sandbox; the job removes it when it ends, and the SDK when it finds the
//! process ended or lost.
//!
//! A backend that cannot run the wrapper (no `setsid`) fails `start` with
//! `unsupported`.

mod attach;
mod control;
mod kill;
mod logs;
mod readiness;
mod start;

use std::time::Duration;

use corral_backend::{Command, ErrorCode, ExitStatus};
use serde::{Deserialize, Serialize};

pub use attach::ProcessHandle;
pub use logs::{LogChunk, LogCursor, Logs, MAX_LOG_READ, TAIL_LINES};
pub use readiness::{READY_POLL, ReadyCheck};

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::sandbox::Sandbox;

/// Where process records live.
pub const PROCS_DIR: &str = "/.corral/procs";

/// Longest process name.
pub const MAX_NAME_LEN: usize = 64;

/// How long `kill` waits after `SIGTERM` before `SIGKILL`, by default.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(5);

/// The background processes of one sandbox, from [`Sandbox::processes`].
#[derive(Debug, Clone, Copy)]
pub struct Processes<'a> {
    pub(crate) sb: &'a Sandbox,
}

impl Sandbox {
    /// The background processes of this sandbox.
    pub fn processes(&self) -> Processes<'_> {
        Processes { sb: self }
    }
}

/// How to start a process.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Working directory (absolute sandbox path); default: the sandbox's home.
    pub cwd: Option<String>,
    /// Variables added to the environment.
    pub env: corral_backend::Environment,
    /// Wait for this before `start` returns; on failure the process is
    /// killed and `start` fails with the check's error.
    pub ready: Option<ReadyCheck>,
    /// How long the readiness check may take (default 30 s).
    pub ready_timeout: Option<Duration>,
}

/// What `spec.json` of a process record holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// The process's name.
    pub name: String,
    /// What it runs.
    pub command: Command,
    /// Its working directory, if one was given.
    pub cwd: Option<String>,
    /// The names of the variables it was given (never their values).
    pub env_names: Vec<String>,
    /// When it was started, epoch milliseconds.
    pub started_at_ms: u64,
}

/// Where a process is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessState {
    /// Its process group runs.
    Running,
    /// It ended: the code its shell reported (128 + N for a command killed
    /// by signal N), or the signal `kill` ended the group with.
    Exited(ExitStatus),
    /// Its group is gone without an exit record: something outside the
    /// SDK killed it (or it never started).
    Lost,
}

impl ProcessState {
    /// True while it runs.
    pub fn is_running(&self) -> bool {
        matches!(self, ProcessState::Running)
    }
}

/// One process, as [`Processes::list`] and [`Processes::status`] report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its name.
    pub name: String,
    /// Its pid (= process group id) as the sandbox sees it, once known.
    pub pid: Option<u32>,
    /// What it was started with (secrets redacted), when the record is readable.
    pub record: Option<ProcessRecord>,
    /// Where it is in its life.
    pub state: ProcessState,
}

/// Checks a process name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting
/// with `.` or `-`.
pub(crate) fn check_name(sb: &Sandbox, op: Operation, name: &str) -> Result<()> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let why = if name.is_empty() {
        Some("is empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("is longer than 64 characters")
    } else if !ok_chars {
        Some("may hold only A-Z, a-z, 0-9, '.', '_' and '-'")
    } else if name.starts_with('.') || name.starts_with('-') {
        Some("may not start with '.' or '-'")
    } else {
        None
    };
    match why {
        Some(why) => Err(sb.fail(
            ErrorCode::InvalidInput,
            op,
            format!("process name {name:?} {why}"),
        )),
        None => Ok(()),
    }
}

/// The activity record's file name for process `name`.
pub(crate) fn activity_name(name: &str) -> String {
    format!("proc-{name}")
}

/// The activity record (under [`crate::ACTIVITY_DIR`]) that keeps garbage
/// collection away while process `name` runs.
pub(crate) fn activity_path(name: &str) -> String {
    format!("{}/{}", crate::ACTIVITY_DIR, activity_name(name))
}

/// The record directory of process `name`.
pub(crate) fn dir_of(name: &str) -> String {
    format!("{PROCS_DIR}/{name}")
}

impl Processes<'_> {
    pub(crate) fn fail(
        &self,
        code: ErrorCode,
        op: Operation,
        msg: impl Into<String>,
    ) -> SandboxError {
        self.sb.fail(code, op, msg)
    }
}
