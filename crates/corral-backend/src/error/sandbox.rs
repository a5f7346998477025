//! [`SandboxError`]: the sandbox a call names cannot serve it.

use super::ErrorCode;

/// The sandbox a call names is missing, paused, or no longer alive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// No sandbox has this id (any more).
    #[error("no sandbox with id {id:?}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The sandbox is paused, so the call cannot run until it is resumed.
    #[error("sandbox {id} is paused: resume it first")]
    Paused {
        /// The sandbox.
        id: String,
    },
    /// The sandbox's init is gone (killed from outside, or by the OOM
    /// killer), so nothing can run in it; `gc` reclaims what it holds.
    #[error("sandbox {id}: it is dead (its init, host pid {init_pid}, is gone); `gc` reclaims it")]
    Dead {
        /// The sandbox.
        id: String,
        /// The host pid its init had.
        init_pid: u32,
    },
    /// The sandbox's init went away while the call was in flight.
    #[error("sandbox {id}: its init went away during the call")]
    InitGone {
        /// The sandbox.
        id: String,
    },
    /// The sandbox's init does not answer its control channel.
    #[error("sandbox {id}: its init does not answer: {detail}")]
    InitUnreachable {
        /// The sandbox.
        id: String,
        /// What the channel reported.
        detail: String,
    },
    /// The sandbox's lifetime (`timeout`) ended during the call; everything
    /// in it was killed.
    #[error("sandbox {id}: its lifetime ended during the call; everything in it was killed")]
    LifetimeEnded {
        /// The sandbox.
        id: String,
    },
}

impl SandboxError {
    /// The SDK's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::NotFound { .. } => ErrorCode::NotFound,
            Self::Paused { .. } => ErrorCode::Conflict,
            Self::Dead { .. } | Self::InitGone { .. } | Self::InitUnreachable { .. } => {
                ErrorCode::Unavailable
            }
            Self::LifetimeEnded { .. } => ErrorCode::Timeout,
        }
    }
}
