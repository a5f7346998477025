//! `BackendError`: the closed error codes every backend speaks.

use std::fmt;

/// The closed set of error codes a backend reports (the SDK specification's
/// `SandboxError` codes). A backend maps every failure of its platform onto
/// one of these and never attaches the platform's own error object, which can
/// hold credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The backend refused the caller's credentials.
    Auth,
    /// The sandbox, snapshot, file or process does not exist (any more).
    NotFound,
    /// A quota or resource limit of the platform was hit (disk full, too many sandboxes).
    Quota,
    /// The platform could not be reached or is not usable on this host.
    Unavailable,
    /// The request asks for something this backend cannot enforce; nothing was created.
    Unsupported,
    /// The backend itself is defective (a declared capability without its member, a
    /// malformed answer from the platform).
    Provider,
    /// An operation or a command ran past its deadline; its processes were killed.
    Timeout,
    /// The caller aborted the operation; its processes were killed.
    Aborted,
    /// The request was malformed (bad path, bad name, NUL byte, bad label).
    InvalidInput,
    /// The request conflicts with the current state (a duplicate key, a paused sandbox).
    Conflict,
    /// A host I/O operation failed for a reason none of the other codes names.
    Io,
}

impl ErrorCode {
    /// The code's snake_case name, as printed in `[code]` prefixes.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Auth => "auth",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Quota => "quota",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Provider => "provider",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Aborted => "aborted",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Io => "io",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A backend failure: a closed code and a one-line, credential-free message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// One line saying what went wrong, naming the offending value.
    pub message: String,
}

impl BackendError {
    /// A new error; newlines in `message` are folded so that it stays one line.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = if message.contains('\n') {
            message.replace(['\r', '\n'], " ")
        } else {
            message
        };
        BackendError { code, message }
    }

    /// `not_found` for a sandbox id.
    pub fn sandbox_not_found(id: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("no sandbox with id {id:?}"))
    }

    /// `unsupported`: the backend cannot enforce or perform `what`.
    pub fn unsupported(backend: &str, what: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::Unsupported,
            format!("the {backend} backend cannot {what}"),
        )
    }

    /// `invalid_input` naming the bad value.
    pub fn invalid(what: impl fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidInput, what.to_string())
    }

    /// Maps a host I/O error about `context` (e.g. a path) onto a code.
    pub fn from_io(context: impl fmt::Display, err: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let code = match err.kind() {
            K::NotFound => ErrorCode::NotFound,
            K::AlreadyExists => ErrorCode::Conflict,
            K::PermissionDenied => ErrorCode::Io,
            K::StorageFull | K::QuotaExceeded => ErrorCode::Quota,
            K::InvalidInput | K::InvalidFilename | K::IsADirectory | K::NotADirectory => {
                ErrorCode::InvalidInput
            }
            K::DirectoryNotEmpty => ErrorCode::Conflict,
            K::TimedOut => ErrorCode::Timeout,
            _ => ErrorCode::Io,
        };
        Self::new(code, format!("{context}: {err}"))
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for BackendError {}

/// The result type of every backend primitive.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_code_prefix() {
        let e = BackendError::new(ErrorCode::NotFound, "no sandbox\nwith id x");
        assert_eq!(e.to_string(), "[not_found] no sandbox with id x");
    }

    #[test]
    fn codes_serialize_snake_case() {
        let s = serde_json::to_string(&ErrorCode::InvalidInput).unwrap();
        assert_eq!(s, "\"invalid_input\"");
        assert_eq!(ErrorCode::InvalidInput.as_str(), "invalid_input");
    }
}
