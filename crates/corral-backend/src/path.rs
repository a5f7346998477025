//! Sandbox paths at the primitives' edge: the primitives take the
//! contract's [`SandboxPath`] (absolute, normalized, bounded), made once
//! where a caller's text comes in. Containment itself is the backend's
//! business (see [`crate::contained`]), never a string comparison.

pub use corral_contract::SandboxPath;

use crate::error::{RequestError, Result};

/// The sandbox path `raw` names, normalized lexically (`.` and empty
/// components dropped, `..` popped, never above `/`); `field` names the
/// argument in the error.
///
/// # Errors
///
/// `invalid_input` ([`RequestError::Path`]) for an empty or relative path,
/// one holding a NUL byte, or one beyond the contract's bounds (4,096
/// bytes, 255 per component) once normalized.
pub fn sandbox_path(field: &str, raw: &str) -> Result<SandboxPath> {
    SandboxPath::normalize_lexically(raw).map_err(|e| {
        RequestError::Path {
            field: field.into(),
            path: raw.replace('\0', "\\0"),
            rule: e.broken_rule().to_owned(),
        }
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    /// SDK rule "Paths are absolute POSIX paths": a caller's path → the
    /// sandbox path it names, or the refusal, made once at the edge.
    #[test]
    fn a_callers_path_is_normalized_once_or_refused_in_one_line() {
        let rows: [(&str, Result<&str, &str>); 9] = [
            ("/a/./b//c/../d/", Ok("/a/b/d")),
            ("/../..", Ok("/")),
            ("/", Ok("/")),
            (
                "rel",
                Err(r#"cwd: path "rel" is not absolute (must start with /)"#),
            ),
            (
                "",
                Err(r#"cwd: path "" is empty (must be an absolute path)"#),
            ),
            ("/a\0b", Err(r#"cwd: path "/a\\0b" contains NUL"#)),
            (
                "./a",
                Err(r#"cwd: path "./a" is not absolute (must start with /)"#),
            ),
            ("/x/../y/../..", Ok("/")),
            ("//workspace", Ok("/workspace")),
        ];
        for (raw, want) in rows {
            match (sandbox_path("cwd", raw), want) {
                (Ok(p), Ok(w)) => assert_eq!(p.as_str(), w, "{raw:?}"),
                (Err(e), Err(w)) => {
                    assert_eq!(e.code(), ErrorCode::InvalidInput, "{raw:?}");
                    assert_eq!(e.to_string(), format!("[invalid_input] {w}"), "{raw:?}");
                }
                (got, _) => panic!("{raw:?}: {got:?}"),
            }
        }
        let long = format!("/{}", "a".repeat(256));
        assert!(
            sandbox_path("path", &long)
                .unwrap_err()
                .to_string()
                .contains("longer than 255 bytes")
        );
    }
}
