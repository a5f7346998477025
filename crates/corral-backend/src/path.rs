//! Sandbox paths as backends receive them.

use crate::error::{RequestError, Result};

/// Refuses anything but an absolute path without NUL bytes. `field` names the
/// argument in the error. Components `.` and `..` are resolved lexically by
/// [`normalize`]; containment itself is the backend's business (see
/// [`crate::contained`]), never a string comparison.
pub fn validate_sandbox_path(field: &str, path: &str) -> Result<()> {
    if path.contains('\0') {
        return Err(RequestError::PathNul {
            field: field.into(),
            path: path.replace('\0', "\\0"),
        }
        .into());
    }
    if !path.starts_with('/') {
        return Err(RequestError::PathRelative {
            field: field.into(),
            path: path.into(),
        }
        .into());
    }
    Ok(())
}

/// Validates and normalizes an absolute path lexically: empty and `.`
/// components dropped, `..` pops (never above `/`). Returns the components.
pub fn normalize(field: &str, path: &str) -> Result<Vec<String>> {
    validate_sandbox_path(field, path)?;
    let mut out: Vec<String> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c.to_string()),
        }
    }
    Ok(out)
}

/// The normalized absolute form of `path` (`/` for the root).
pub fn normalized(field: &str, path: &str) -> Result<String> {
    let parts = normalize(field, path)?;
    Ok(format!("/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_lexically() {
        assert_eq!(normalized("p", "/a/./b//c/../d/").unwrap(), "/a/b/d");
        assert_eq!(normalized("p", "/../..").unwrap(), "/");
        assert!(normalized("p", "rel").is_err());
        assert!(normalized("p", "/a\0b").is_err());
    }
}
