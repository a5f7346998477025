//! [`ErrorBody`]: a backend error as the backend routes carry it.
//!
//! A [`BackendError`] crosses the wire as its code and its line, which is
//! all a caller may show. One failure must still be told apart from the
//! others of its code without asking the backend again: that the sandbox
//! the call named is gone, as opposed to a program, a directory or a path
//! in it. The body names that sandbox, and the remote client decodes it as
//! the same typed [`SandboxError::NotFound`]; every other error arrives as a
//! [`RelayedError`](corral_backend::RelayedError).

use corral_backend::{BackendError, ErrorCode, SandboxError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The body of a backend error (HTTP 422, or an `exec` stream's `error`
/// line): `{code, message}`, plus `missing_sandbox` when the error is that
/// the sandbox itself does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The closed code.
    pub code: ErrorCode,
    /// The one line.
    pub message: String,
    /// The id of the sandbox that does not exist, when that is the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_sandbox: Option<String>,
}

impl From<&BackendError> for ErrorBody {
    fn from(error: &BackendError) -> Self {
        let missing_sandbox = match error {
            BackendError::Sandbox(SandboxError::NotFound { id }) => Some(id.clone()),
            _ => None,
        };
        ErrorBody {
            code: error.code(),
            message: error.message(),
            missing_sandbox,
        }
    }
}

impl From<ErrorBody> for BackendError {
    fn from(body: ErrorBody) -> Self {
        match body.missing_sandbox {
            Some(id) if body.code == ErrorCode::NotFound => SandboxError::NotFound { id }.into(),
            _ => BackendError::relayed(body.code, body.message),
        }
    }
}

/// `#[serde(with = "...")]` for a [`BackendError`] field carried as an
/// [`ErrorBody`].
pub(crate) mod as_body {
    use super::{BackendError, Deserialize, Deserializer, ErrorBody, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(error: &BackendError, s: S) -> Result<S::Ok, S::Error> {
        ErrorBody::from(error).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BackendError, D::Error> {
        ErrorBody::deserialize(d).map(BackendError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::ExecError;

    /// A missing sandbox and a missing program share `not_found`; the body
    /// keeps them apart, and the sandbox's comes back typed.
    #[test]
    fn a_missing_sandbox_survives_the_wire_typed() {
        let gone = BackendError::sandbox_not_found("sb-1");
        let json = serde_json::to_value(ErrorBody::from(&gone)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "code": "not_found",
                "message": "no sandbox with id \"sb-1\"",
                "missing_sandbox": "sb-1",
            })
        );
        let back = BackendError::from(serde_json::from_value::<ErrorBody>(json).unwrap());
        assert_eq!(back, gone);

        let program: BackendError = ExecError::ProgramNotFound {
            program: "nope".into(),
        }
        .into();
        let json = serde_json::to_value(ErrorBody::from(&program)).unwrap();
        assert_eq!(json.get("missing_sandbox"), None);
        let back = BackendError::from(serde_json::from_value::<ErrorBody>(json).unwrap());
        assert!(matches!(back, BackendError::Relayed(_)), "{back:?}");
        assert_eq!(back.code(), ErrorCode::NotFound);
        assert_eq!(back.message(), program.message());
    }

    /// A body without the field (the plain `{code, message}` form) decodes
    /// as a relayed error.
    #[test]
    fn the_plain_form_decodes_relayed() {
        let body: ErrorBody = serde_json::from_str(r#"{"code":"quota","message":"full"}"#).unwrap();
        let e = BackendError::from(body);
        assert!(matches!(e, BackendError::Relayed(_)));
        assert_eq!(e.to_string(), "[quota] full");
    }

    /// What a hostile or broken server may send as an error body, and what
    /// the client makes of it: never a typed absence the code does not
    /// back, never a second line, never an unknown code.
    #[test]
    fn hostile_error_bodies_decode_to_what_they_can_back() {
        // (what is sent, Some((code, one line, typed absence)) or None: refused)
        type Expected = Option<(ErrorCode, &'static str, bool)>;
        let rows: [(&str, Expected); 6] = [
            (
                r#"{"code":"quota","message":"full","missing_sandbox":"sb-1"}"#,
                Some((ErrorCode::Quota, "full", false)),
            ),
            (
                r#"{"code":"not_found","message":"gone","missing_sandbox":"sb-1"}"#,
                Some((ErrorCode::NotFound, "no sandbox with id \"sb-1\"", true)),
            ),
            (
                r#"{"code":"not_found","message":"x","missing_sandbox":"a\nb"}"#,
                Some((ErrorCode::NotFound, "no sandbox with id \"a\\nb\"", true)),
            ),
            (
                r#"{"code":"io","message":"line one\nline two\r\nthree"}"#,
                Some((ErrorCode::Io, "line one line two  three", false)),
            ),
            (r#"{"code":"root","message":"x"}"#, None),
            (r#"{"message":"no code"}"#, None),
        ];
        for (sent, expected) in rows {
            let decoded = serde_json::from_str::<ErrorBody>(sent).map(BackendError::from);
            match (decoded, expected) {
                (Ok(e), Some((code, line, typed))) => {
                    assert_eq!(e.code(), code, "{sent}");
                    assert_eq!(e.message(), line, "{sent}");
                    assert_eq!(
                        matches!(e, BackendError::Sandbox(SandboxError::NotFound { .. })),
                        typed,
                        "{sent}"
                    );
                }
                (Err(_), None) => {}
                (got, want) => panic!("{sent}: got {got:?}, wanted {want:?}"),
            }
        }
    }
}
