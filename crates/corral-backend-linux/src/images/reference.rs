//! Image references: `host`, `name`, `name@sha256:<hex>`, `sha256:<hex>`.

use super::digest::parse_digest;
use super::error::ImageError;

/// The name of the built-in image.
pub const HOST_NAME: &str = "host";

/// The longest name accepted.
pub const MAX_NAME_LEN: usize = 255;

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// The built-in `host` image, optionally pinned to a digest.
    Host {
        /// The `sha256:` digest it must have, if pinned.
        digest: Option<String>,
    },
    /// A stored image by name, optionally pinned to a digest.
    Name {
        /// The name.
        name: String,
        /// The `sha256:` digest it must have, if pinned.
        digest: Option<String>,
    },
    /// A stored image by its `sha256:` digest.
    Digest(String),
}

impl Reference {
    /// Parses `s`; `invalid_input` if it is none of the accepted forms.
    pub fn parse(s: &str) -> Result<Self, ImageError> {
        let bad = |reason| ImageError::InvalidReference {
            reference: s.to_string(),
            reason,
        };
        if s.starts_with("sha256:") {
            return parse_digest(s)
                .map(|_| Reference::Digest(s.to_string()))
                .ok_or(bad("a digest is sha256: and 64 lowercase hex digits"));
        }
        let (name, digest) = match s.split_once('@') {
            Some((name, digest)) => {
                parse_digest(digest)
                    .ok_or(bad("a digest is sha256: and 64 lowercase hex digits"))?;
                (name, Some(digest.to_string()))
            }
            None => (s, None),
        };
        if name == HOST_NAME {
            return Ok(Reference::Host { digest });
        }
        check_name(name).map_err(bad)?;
        Ok(Reference::Name {
            name: name.to_string(),
            digest,
        })
    }
}

/// Checks a name for storing an image under: 1 to 255 of `A-Z a-z 0-9 . _ : / -`,
/// starting with a letter or digit, not `host`, not digest-shaped.
pub fn validate_name(name: &str) -> Result<(), ImageError> {
    let bad = |reason| ImageError::InvalidReference {
        reference: name.to_string(),
        reason,
    };
    if name == HOST_NAME {
        return Err(ImageError::Builtin {
            reference: name.to_string(),
        });
    }
    if name.starts_with("sha256:") {
        return Err(bad("a name cannot start with sha256:"));
    }
    check_name(name).map_err(bad)
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("the name is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return Err("the name is longer than 255 bytes");
    }
    if !name.as_bytes()[0].is_ascii_alphanumeric() {
        return Err("a name starts with a letter or digit");
    }
    let ok = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'/' | b'-'));
    if ok {
        Ok(())
    } else {
        Err("a name holds only letters, digits and . _ : / -")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_refuses_the_rest() {
        let hex = "0".repeat(64);
        let d = format!("sha256:{hex}");
        assert_eq!(
            Reference::parse("host").unwrap(),
            Reference::Host { digest: None }
        );
        assert_eq!(
            Reference::parse(&format!("host@{d}")).unwrap(),
            Reference::Host {
                digest: Some(d.clone())
            }
        );
        assert_eq!(
            Reference::parse("alpine:3.20").unwrap(),
            Reference::Name {
                name: "alpine:3.20".into(),
                digest: None
            }
        );
        assert_eq!(Reference::parse(&d).unwrap(), Reference::Digest(d.clone()));
        for bad in ["", "sha256:xyz", "a@b", "../x", "a b", "-a", "x@sha256:12"] {
            let e = Reference::parse(bad).unwrap_err();
            assert_eq!(e.code().as_str(), "invalid_input", "{bad}");
        }
        assert_eq!(
            validate_name("host").unwrap_err().code().as_str(),
            "conflict"
        );
        assert!(validate_name("registry.example/team/app:v1").is_ok());
    }
}
