//! Engine errors onto corral's closed codes. The engine's own message for a
//! 4xx answer is kept (it names the container or path, never credentials);
//! transport failures keep only their kind.

use bollard::errors::Error;
use corral_backend::{BackendError, ErrorCode, PlatformError};

/// How to make an image the engine lacks available: corral contacts no
/// registry, and its own image store (`corral image`) feeds only the linux
/// backend, so the engine's own commands are the way.
pub(crate) const LOAD_HINT: &str = "load it with `docker load` or `docker import`";

/// Maps a bollard error about `context` (an operation and its subject) onto
/// a [`BackendError`]: an answer of the engine is
/// [`PlatformError::Answered`], coded by its status (404 → `not_found`,
/// 409 → `conflict`, 400 → `invalid_input`, 401/403 → `auth`, 429 →
/// `quota`, 5xx → `provider`); an unreachable engine is `unavailable`; a
/// malformed answer `provider`.
pub fn map_error(context: &str, err: &Error) -> BackendError {
    let unavailable = |detail: String| PlatformError::Unavailable {
        what: context.to_string(),
        detail,
    };
    let error = match err {
        Error::DockerResponseServerError {
            status_code,
            message,
        } => PlatformError::Answered {
            what: context.to_string(),
            status: *status_code,
            detail: if *status_code < 500 {
                message.trim().to_string()
            } else {
                format!("the engine answered {status_code}: {}", message.trim())
            },
        },
        Error::RequestTimeoutError => {
            unavailable("the Docker Engine did not answer in time".into())
        }
        Error::SocketNotFoundError(path) => {
            unavailable(format!("no Docker Engine socket at {path}"))
        }
        Error::IOError { err } => {
            unavailable(format!("cannot reach the Docker Engine ({})", err.kind()))
        }
        Error::HyperResponseError { .. }
        | Error::HttpClientError { .. }
        | Error::HyperLegacyError { .. } => {
            unavailable("the connection to the Docker Engine failed".into())
        }
        Error::DockerStreamError { error } => PlatformError::Malformed {
            what: context.to_string(),
            detail: error.trim().to_string(),
        },
        Error::JsonSerdeError { .. } | Error::JsonDataError { .. } => PlatformError::Malformed {
            what: context.to_string(),
            detail: "the Docker Engine sent a malformed answer".into(),
        },
        Error::APIVersionParseError {} => {
            unavailable("the Docker Engine reported no usable API version".into())
        }
        _ => unavailable("the Docker Engine request failed".into()),
    };
    error.into()
}

/// Maps an engine error about sandbox `id` like [`map_error`] (`context`
/// names the operation and its subject), except that a missing container
/// is the sandbox's `not_found`.
pub(crate) fn sandbox_error(id: &str, context: &str, err: &Error) -> BackendError {
    let mapped = map_error(context, err);
    if mapped.code() == ErrorCode::NotFound {
        BackendError::sandbox_not_found(id)
    } else {
        mapped
    }
}

/// `provider`: the engine's answer lacks a field corral needs.
pub(crate) fn malformed(context: &str, what: &str) -> BackendError {
    PlatformError::Malformed {
        what: context.to_string(),
        detail: format!("the Docker Engine's answer has no {what}"),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    // SDK spec, "Rules an adapter must follow": translate errors — "Map the
    // service's failures to `SandboxError` codes such as `auth`,
    // `not_found`, `quota`, and `unavailable`."
    #[test]
    fn status_codes_map_onto_closed_codes() {
        let e = |status_code| Error::DockerResponseServerError {
            status_code,
            message: "No such container: dkr-1".into(),
        };
        assert_eq!(map_error("x", &e(404)).code(), ErrorCode::NotFound);
        assert_eq!(map_error("x", &e(409)).code(), ErrorCode::Conflict);
        assert_eq!(map_error("x", &e(400)).code(), ErrorCode::InvalidInput);
        assert_eq!(map_error("x", &e(403)).code(), ErrorCode::Auth);
        assert_eq!(map_error("x", &e(500)).code(), ErrorCode::Provider);
        assert_eq!(
            map_error("connect dkr-1", &e(404)).message(),
            "connect dkr-1: No such container: dkr-1"
        );
        let refused = Error::IOError {
            err: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        };
        assert_eq!(map_error("x", &refused).code(), ErrorCode::Unavailable);
    }

    // `corral image` has import, ls and rm, and no command that puts an
    // image into the engine: the hint names only the engine's commands.
    #[test]
    fn the_load_hint_names_only_commands_that_exist() {
        assert_eq!(LOAD_HINT, "load it with `docker load` or `docker import`");
        assert!(!LOAD_HINT.contains("corral"), "{LOAD_HINT}");
    }

    // SDK spec, "Rules an adapter must follow": "Don't attach the native
    // error object, since it can hold credentials" — a transport failure
    // keeps only its kind.
    #[test]
    fn transport_failures_keep_only_their_kind() {
        let native = Error::IOError {
            err: std::io::Error::other("Authorization: Bearer s3cret"),
        };
        let mapped = map_error("connect", &native);
        assert_eq!(mapped.code(), ErrorCode::Unavailable);
        assert!(!mapped.message().contains("s3cret"), "{}", mapped.message());
        // The chain holds corral's own typed cause only, never the native error.
        let mut source = std::error::Error::source(&mapped);
        while let Some(cause) = source {
            assert!(cause.downcast_ref::<Error>().is_none(), "{cause}");
            assert!(!cause.to_string().contains("s3cret"), "{cause}");
            source = cause.source();
        }
    }
}
