//! `SandboxError`: what every SDK call fails with.

use std::fmt;

use corral_backend::{BackendError, ErrorCode};

use crate::operation::Operation;

/// An SDK failure: a closed code, the backend that failed, the SDK operation
/// that failed, and a one-line message with secrets redacted. Displayed as
/// `SandboxError [code] provider.operation: message`. A backend's native
/// error is translated into a code and a message and never attached, since
/// it can hold credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// The backend's name (`linux`, `local`, `memory`, …).
    pub provider: String,
    /// The SDK operation, e.g. `run`, `files.edit`, `git.clone`.
    pub operation: Operation,
    /// One line saying what went wrong.
    pub message: String,
}

impl SandboxError {
    /// A new error; newlines in `message` are folded so it stays one line.
    pub fn new(
        code: ErrorCode,
        provider: impl Into<String>,
        operation: Operation,
        message: impl Into<String>,
    ) -> Self {
        let message: String = message.into();
        SandboxError {
            code,
            provider: provider.into(),
            operation,
            message: message.replace(['\r', '\n'], " "),
        }
    }

    /// Translates a backend error raised during `operation` of `provider`.
    pub fn from_backend(provider: &str, operation: Operation, err: BackendError) -> Self {
        Self::new(err.code(), provider, operation, err.message())
    }
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SandboxError [{}] {}.{}: {}",
            self.code, self.provider, self.operation, self.message
        )
    }
}

impl std::error::Error for SandboxError {}

/// The result type of every SDK call.
pub type Result<T, E = SandboxError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_code_provider_operation_message() {
        let e = SandboxError::new(
            ErrorCode::NotFound,
            "memory",
            Operation::FilesRead,
            "no file\n/x",
        );
        assert_eq!(
            e.to_string(),
            "SandboxError [not_found] memory.files.read: no file /x"
        );
    }
}
