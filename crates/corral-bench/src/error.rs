//! How the bench fails: one line each, never a panic.

use thiserror::Error;

/// A failure of the bench itself or of one measured operation.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BenchError {
    /// A file or process operation failed.
    #[error("{what}: {message}")]
    Io {
        /// What was being done.
        what: String,
        /// The platform's message.
        message: String,
    },
    /// A measured command ran but did not succeed.
    #[error("{command} exited unsuccessfully ({status})")]
    CommandFailed {
        /// The command, as typed.
        command: String,
        /// How it ended.
        status: String,
    },
    /// A backend call failed.
    #[error("{backend} backend: {operation}: {message}")]
    Backend {
        /// The backend's name.
        backend: String,
        /// The primitive called.
        operation: String,
        /// The backend's one-line error.
        message: String,
    },
    /// One iteration ran past the per-iteration limit.
    #[error("took longer than {seconds} s")]
    Timeout {
        /// The limit, in seconds.
        seconds: u64,
    },
    /// An `only` filter matched no measure.
    #[error("no measure matches {filter:?}; known: {known}")]
    UnknownFilter {
        /// The filter given.
        filter: String,
        /// The measures' names and groups, comma-separated.
        known: String,
    },
    /// The report could not be encoded.
    #[error("encoding the report as JSON: {0}")]
    Json(String),
}

impl BenchError {
    /// An [`BenchError::Io`] from any displayable error.
    pub fn io(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        BenchError::Io {
            what: what.into(),
            message: e.to_string().replace(['\r', '\n'], " "),
        }
    }

    /// A [`BenchError::Backend`] from a backend error.
    pub fn backend(backend: &str, operation: &str, e: impl std::fmt::Display) -> Self {
        BenchError::Backend {
            backend: backend.into(),
            operation: operation.into(),
            message: e.to_string().replace(['\r', '\n'], " "),
        }
    }
}
