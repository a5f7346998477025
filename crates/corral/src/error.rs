//! How the CLI fails: one line on stderr, `corral: error: [code] message`.

use std::fmt;

use corral_backend::BackendError;

/// Exit status for a failure of corral or of the backend.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status for bad input on the command line.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when the command ran past `--timeout` (as `timeout(1)` does).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status when stdout or stderr was a pipe whose reader closed it
/// (128 + SIGPIPE, what a shell reports for a writer the closed pipe
/// killed): `corral run -- yes | head -1`.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// A CLI failure: the `[code]`, the one-line message, and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The code shown in brackets (`usage`, or a backend error code).
    pub code: String,
    /// What went wrong, one line.
    pub message: String,
    /// The process exit status.
    pub exit: i32,
}

impl CliError {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: "usage".into(),
            message: message.into(),
            exit: EXIT_USAGE,
        }
    }

    /// A failure with `code` (exit 1).
    pub fn failure(code: impl Into<String>, message: impl Into<String>) -> Self {
        CliError {
            code: code.into(),
            message: message.into(),
            exit: EXIT_FAILURE,
        }
    }

    /// Replaces the exit status.
    pub fn with_exit(mut self, exit: i32) -> Self {
        self.exit = exit;
        self
    }
}

impl CliError {
    /// The line for a failure with the closed code `code`: bad input
    /// exits 2, a timeout 124, anything else 1.
    fn of_code(code: corral_backend::ErrorCode, message: String) -> Self {
        let exit = match code {
            corral_backend::ErrorCode::InvalidInput => EXIT_USAGE,
            corral_backend::ErrorCode::Timeout => EXIT_TIMEOUT,
            _ => EXIT_FAILURE,
        };
        CliError {
            code: code.as_str().into(),
            message,
            exit,
        }
    }
}

impl From<BackendError> for CliError {
    fn from(e: BackendError) -> Self {
        CliError::of_code(e.code(), e.message())
    }
}

impl From<corral_sdk::SandboxError> for CliError {
    fn from(e: corral_sdk::SandboxError) -> Self {
        CliError::of_code(e.code, e.message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one_line = self.message.replace(['\r', '\n'], " ");
        write!(f, "corral: error: [{}] {}", self.code, one_line)
    }
}

/// The result of a CLI command: the exit status on success.
pub type CliResult = Result<i32, CliError>;
