//! [`PlatformError`]: the backend's own machinery failed.

use std::fmt;

use super::ErrorCode;

/// A failure of what the backend runs on: its platform (an engine, a
/// remote service), its state directory, the host itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// The backend cannot enforce or perform what was asked; nothing was done.
    #[error("the {backend} backend cannot {what}")]
    Unsupported {
        /// The backend.
        backend: String,
        /// What it cannot do.
        what: String,
    },
    /// The platform cannot be reached or used on this host.
    #[error("{what}: {detail}")]
    Unavailable {
        /// What was being done or reached.
        what: String,
        /// Why it is not usable.
        detail: String,
    },
    /// The platform answered a request with an error status (an HTTP API).
    /// Its own message is kept; it names the subject, never credentials.
    #[error("{what}: {detail}")]
    Answered {
        /// What was asked.
        what: String,
        /// The status it answered.
        status: u16,
        /// Its message.
        detail: String,
    },
    /// The platform's answer, or a stored record, is malformed.
    #[error("{what}: {detail}")]
    Malformed {
        /// What was read.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The backend is defective: a broken invariant of its own.
    #[error("{what}")]
    Defective {
        /// The invariant broken.
        what: String,
    },
    /// A host I/O operation failed.
    #[error("{what}: {detail}")]
    Io {
        /// The step that failed.
        what: String,
        /// The kind of the I/O error, which gives the code.
        kind: std::io::ErrorKind,
        /// The error's text.
        detail: String,
    },
    /// The backend's state refuses the change asked for (a built-in
    /// resource, or one in use).
    #[error("{what}: {detail}")]
    Conflict {
        /// What was to be changed.
        what: String,
        /// Why it cannot be.
        detail: String,
    },
}

impl PlatformError {
    /// A host I/O error during `what`.
    pub fn io(what: impl fmt::Display, err: &std::io::Error) -> Self {
        Self::Io {
            what: what.to_string(),
            kind: err.kind(),
            detail: err.to_string(),
        }
    }

    /// The SDK's code.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unsupported { .. } => ErrorCode::Unsupported,
            Self::Unavailable { .. } => ErrorCode::Unavailable,
            Self::Answered { status, .. } => status_code(*status),
            Self::Malformed { .. } | Self::Defective { .. } => ErrorCode::Provider,
            Self::Io { kind, .. } => ErrorCode::of_io(*kind),
            Self::Conflict { .. } => ErrorCode::Conflict,
        }
    }
}

/// The code of a platform's HTTP error status: 404 → `not_found`, 409 →
/// `conflict`, 400 → `invalid_input`, 401/403 → `auth`, 429 → `quota`,
/// anything else → `provider`.
#[must_use]
pub const fn status_code(status: u16) -> ErrorCode {
    match status {
        400 => ErrorCode::InvalidInput,
        401 | 403 => ErrorCode::Auth,
        404 => ErrorCode::NotFound,
        409 => ErrorCode::Conflict,
        429 => ErrorCode::Quota,
        _ => ErrorCode::Provider,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status table a platform's HTTP answers go through.
    #[test]
    fn statuses_map_to_one_code_each() {
        let table = [
            (400, ErrorCode::InvalidInput),
            (401, ErrorCode::Auth),
            (403, ErrorCode::Auth),
            (404, ErrorCode::NotFound),
            (409, ErrorCode::Conflict),
            (429, ErrorCode::Quota),
            (500, ErrorCode::Provider),
            (503, ErrorCode::Provider),
        ];
        for (status, code) in table {
            assert_eq!(status_code(status), code, "{status}");
        }
    }
}
