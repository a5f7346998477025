//! [`ExecError`]: a command, a process or a terminal failed.

use std::time::Duration;

use super::ErrorCode;

/// Which limit a command ran into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutLimit {
    /// The timeout the request set.
    Requested,
    /// The backend's default wall-clock limit, as the request set none.
    BackendDefault {
        /// The setting that changes the default.
        setting: String,
    },
}

/// Why a command, a process or a terminal failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The program is not in the sandbox (or not on its `PATH`).
    #[error("command not found: {program:?}")]
    ProgramNotFound {
        /// The program asked for.
        program: String,
    },
    /// The program exists but cannot be executed.
    #[error("command is not executable: {program:?}")]
    NotExecutable {
        /// The program asked for.
        program: String,
    },
    /// The working directory does not exist in the sandbox.
    #[error("working directory {cwd:?}: no such directory")]
    CwdNotFound {
        /// The directory asked for.
        cwd: String,
    },
    /// The sandbox refused the command as malformed.
    #[error("malformed command {program:?}")]
    Malformed {
        /// The program asked for.
        program: String,
    },
    /// Starting the program failed for another reason.
    #[error("starting {program:?}: {detail}")]
    StartFailed {
        /// The program asked for.
        program: String,
        /// What the host reported.
        detail: String,
    },
    /// The command ran past its limit; its process group was killed.
    #[error("{}", timed_out(after, limit))]
    TimedOut {
        /// The limit it ran into.
        after: Duration,
        /// Which limit that was.
        limit: TimeoutLimit,
    },
    /// The caller aborted the command; its process group was killed.
    #[error("command aborted; its process group was killed")]
    Aborted,
    /// The caller fell too far behind the command's output; the run was aborted.
    #[error(
        "the client fell more than {bound} bytes of output behind; the run was aborted and its process group killed"
    )]
    OutputOverrun {
        /// The most output held for a slow client, in bytes.
        bound: u64,
    },
    /// The sandbox already runs as many processes as its limit allows.
    #[error("the sandbox runs its process limit already (limits.pids = {pids})")]
    ProcessLimit {
        /// The limit.
        pids: u64,
    },
    /// The process group is being killed, so nothing more may start in it.
    #[error("the process group is dying")]
    GroupDying,
    /// Processes did not die within the bound after `SIGKILL`.
    #[error("{what} did not die within {within:?} of SIGKILL")]
    KillUnconfirmed {
        /// The processes.
        what: String,
        /// The bound waited.
        within: Duration,
    },
    /// The platform reported no exit status for a command that ended.
    #[error("{what}: no exit status was reported")]
    NoExitStatus {
        /// The command.
        what: String,
    },
    /// The image cannot run the shell a command needs.
    #[error("the image cannot run {shell} (exit {code})")]
    ShellMissing {
        /// The shell.
        shell: String,
        /// The exit code trying gave.
        code: i64,
    },
    /// The sandbox's side answered something out of protocol.
    #[error("{what}: unexpected answer: {detail}")]
    UnexpectedReply {
        /// What was asked.
        what: String,
        /// What came back.
        detail: String,
    },
    /// The side running the command (a remote server) did not settle it
    /// within a grace period after its timeout; the caller stopped waiting.
    #[error("{what}: the run did not settle within {grace:?} of its timeout")]
    Unsettled {
        /// The call.
        what: String,
        /// The grace period waited past the timeout.
        grace: Duration,
    },
}

fn timed_out(after: &Duration, limit: &TimeoutLimit) -> String {
    match limit {
        TimeoutLimit::Requested => {
            format!("command timed out after {after:?}; its process group was killed")
        }
        TimeoutLimit::BackendDefault { setting } => format!(
            "command ran into the default wall-clock limit of {after:?} (the request set no \
             timeout; set one, or change the default with {setting}); its process group was killed"
        ),
    }
}

impl ExecError {
    /// The SDK's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::ProgramNotFound { .. } | Self::CwdNotFound { .. } => ErrorCode::NotFound,
            Self::NotExecutable { .. } | Self::Malformed { .. } => ErrorCode::InvalidInput,
            Self::StartFailed { .. } => ErrorCode::Io,
            Self::TimedOut { .. } | Self::KillUnconfirmed { .. } | Self::Unsettled { .. } => {
                ErrorCode::Timeout
            }
            Self::Aborted => ErrorCode::Aborted,
            Self::OutputOverrun { .. } | Self::ProcessLimit { .. } => ErrorCode::Quota,
            Self::GroupDying => ErrorCode::Conflict,
            Self::NoExitStatus { .. } | Self::UnexpectedReply { .. } => ErrorCode::Provider,
            Self::ShellMissing { .. } => ErrorCode::Unavailable,
        }
    }
}
