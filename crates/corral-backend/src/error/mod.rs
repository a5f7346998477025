//! `BackendError`: what a backend primitive reports when it fails.
//!
//! Each primitive has its own error enum, whose variants carry the values
//! that name what went wrong ([`RequestError`], [`SandboxError`],
//! [`CreateError`], [`ExecError`], [`FsError`] for the file primitives,
//! [`SnapshotError`], [`PreviewError`], and [`PlatformError`] for the
//! backend's own machinery). [`BackendError`] aggregates them with `From`,
//! and [`BackendError::code`] gives each the SDK's closed [`ErrorCode`]. A
//! failure is worded once, by its variant, so the same event reads the same
//! on every backend.
//!
//! An error that crossed a process boundary (the wire) arrives as a code
//! and a line only: that is [`RelayedError`], and the one place such an
//! error is made from a code and free text.

#[cfg(test)]
mod codes;
mod create;
mod exec;
mod platform;
mod preview;
mod request;
mod sandbox;
mod snapshot;

use std::fmt;

pub use crate::contained_fs::{FileOp, FsCause, FsError};
pub use create::{CreateError, SetupStep};
pub use exec::{ExecError, TimeoutLimit};
pub use platform::PlatformError;
pub use preview::PreviewError;
pub use request::RequestError;
pub use sandbox::SandboxError;
pub use snapshot::SnapshotError;

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

    /// The code of a host I/O error of this kind: the one table every
    /// [`std::io::Error`] a backend meets goes through.
    #[must_use]
    pub fn of_io(kind: std::io::ErrorKind) -> Self {
        use std::io::ErrorKind as K;
        match kind {
            K::NotFound => ErrorCode::NotFound,
            K::AlreadyExists | K::DirectoryNotEmpty => ErrorCode::Conflict,
            K::StorageFull | K::QuotaExceeded => ErrorCode::Quota,
            K::InvalidInput | K::InvalidFilename | K::IsADirectory | K::NotADirectory => {
                ErrorCode::InvalidInput
            }
            K::TimedOut => ErrorCode::Timeout,
            _ => ErrorCode::Io,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error known only by its code and its line: one that crossed a process
/// boundary (a remote backend's answer on the wire), whose typed cause stayed
/// on the other side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RelayedError {
    /// The code the other side gave.
    pub code: ErrorCode,
    /// The other side's one line.
    pub message: String,
}

/// A backend failure: one primitive's typed error, with a closed code and a
/// one-line, credential-free message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The request was refused before anything was done.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Request(#[from] RequestError),
    /// The sandbox the call names cannot serve it.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Sandbox(#[from] SandboxError),
    /// `create` failed; nothing of the sandbox is left.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Create(#[from] CreateError),
    /// A command, a process or a terminal failed.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Exec(#[from] ExecError),
    /// A file primitive failed.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    File(#[from] FsError),
    /// A snapshot primitive failed.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Snapshot(#[from] SnapshotError),
    /// A preview URL could not be given.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Preview(#[from] PreviewError),
    /// The backend's own machinery failed: its platform, its state, the host.
    #[error("[{}] {}", .0.code(), one_line(.0.to_string()))]
    Platform(#[from] PlatformError),
    /// An error relayed from another process, known only by code and line.
    #[error("[{}] {}", .0.code, .0.message)]
    Relayed(#[from] RelayedError),
}

impl BackendError {
    /// The SDK's closed code for this error.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Request(e) => e.code(),
            Self::Sandbox(e) => e.code(),
            Self::Create(e) => e.code(),
            Self::Exec(e) => e.code(),
            Self::File(e) => e.code(),
            Self::Snapshot(e) => e.code(),
            Self::Preview(e) => e.code(),
            Self::Platform(e) => e.code(),
            Self::Relayed(e) => e.code,
        }
    }

    /// The one line saying what went wrong, without the `[code]` prefix.
    /// Newlines a platform put in a detail are folded.
    #[must_use]
    pub fn message(&self) -> String {
        let text = match self {
            Self::Request(e) => e.to_string(),
            Self::Sandbox(e) => e.to_string(),
            Self::Create(e) => e.to_string(),
            Self::Exec(e) => e.to_string(),
            Self::File(e) => e.to_string(),
            Self::Snapshot(e) => e.to_string(),
            Self::Preview(e) => e.to_string(),
            Self::Platform(e) => e.to_string(),
            Self::Relayed(e) => e.message.clone(),
        };
        one_line(text)
    }

    /// An error known only by a code and a line (see [`RelayedError`]):
    /// what a remote backend answered. Newlines in `message` are folded.
    pub fn relayed(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Relayed(RelayedError {
            code,
            message: one_line(message.into()),
        })
    }

    /// `not_found` for a sandbox id.
    pub fn sandbox_not_found(id: &str) -> Self {
        SandboxError::NotFound { id: id.into() }.into()
    }

    /// `unsupported`: the `backend` cannot enforce or perform `what`.
    pub fn unsupported(backend: &str, what: impl fmt::Display) -> Self {
        PlatformError::Unsupported {
            backend: backend.into(),
            what: what.to_string(),
        }
        .into()
    }

    /// A host I/O error while `context` (a step, never a host path the
    /// caller did not give); coded by [`ErrorCode::of_io`].
    pub fn from_io(context: impl fmt::Display, err: &std::io::Error) -> Self {
        PlatformError::io(context, err).into()
    }
}

/// `text` with every line break folded into a space.
pub(crate) fn one_line(text: String) -> String {
    if text.contains(['\r', '\n']) {
        text.replace(['\r', '\n'], " ")
    } else {
        text
    }
}

/// The serialized shape of a [`BackendError`]: its code and its line. A
/// deserialized one is a [`RelayedError`].
#[derive(serde::Serialize, serde::Deserialize)]
struct Shape {
    code: ErrorCode,
    message: String,
}

impl serde::Serialize for BackendError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Shape {
            code: self.code(),
            message: self.message(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for BackendError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let Shape { code, message } = Shape::deserialize(d)?;
        Ok(Self::relayed(code, message))
    }
}

/// The result type of every backend primitive.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_with_code_prefix() {
        let e = BackendError::relayed(ErrorCode::NotFound, "no sandbox\nwith id x");
        assert_eq!(e.to_string(), "[not_found] no sandbox with id x");
        let e: BackendError = PlatformError::Unavailable {
            what: "the engine".into(),
            detail: "line one\nline two".into(),
        }
        .into();
        assert_eq!(e.to_string(), "[unavailable] the engine: line one line two");
    }

    #[test]
    fn codes_serialize_snake_case() {
        let s = serde_json::to_string(&ErrorCode::InvalidInput).unwrap();
        assert_eq!(s, "\"invalid_input\"");
        assert_eq!(ErrorCode::InvalidInput.as_str(), "invalid_input");
    }

    #[test]
    fn an_error_serializes_as_its_code_and_line_and_comes_back_relayed() {
        let e = BackendError::sandbox_not_found("sb-1");
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "not_found", "message": "no sandbox with id \"sb-1\""})
        );
        let back: BackendError = serde_json::from_value(json).unwrap();
        assert_eq!(back.code(), ErrorCode::NotFound);
        assert_eq!(back.message(), e.message());
        assert!(matches!(back, BackendError::Relayed(_)));
    }

    /// The I/O table: each kind a backend meets, and the code it reports.
    #[test]
    fn io_kinds_map_to_one_code_each() {
        use std::io::ErrorKind as K;
        let table = [
            (K::NotFound, ErrorCode::NotFound),
            (K::AlreadyExists, ErrorCode::Conflict),
            (K::DirectoryNotEmpty, ErrorCode::Conflict),
            (K::PermissionDenied, ErrorCode::Io),
            (K::StorageFull, ErrorCode::Quota),
            (K::QuotaExceeded, ErrorCode::Quota),
            (K::InvalidInput, ErrorCode::InvalidInput),
            (K::IsADirectory, ErrorCode::InvalidInput),
            (K::NotADirectory, ErrorCode::InvalidInput),
            (K::TimedOut, ErrorCode::Timeout),
            (K::BrokenPipe, ErrorCode::Io),
        ];
        for (kind, code) in table {
            assert_eq!(ErrorCode::of_io(kind), code, "{kind:?}");
            let e = BackendError::from_io("a step", &std::io::Error::from(kind));
            assert_eq!(e.code(), code, "{kind:?}");
        }
    }
}
