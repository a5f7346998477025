//! Content digests: `^sha256:[0-9a-f]{64}$`.

use crate::InvalidValue;
use crate::bounds::DIGEST_PATTERN;
use crate::macros::string_newtype;

/// A SHA-256 content digest in the contract's only form, `sha256:` followed by
/// 64 lowercase hex digits (bounds table: "Digests | `^sha256:[0-9a-f]{64}$`").
///
/// This type never hashes; a backend computes the hash and wraps it with
/// [`Digest::from_sha256_hex`] or [`Digest::from_sha256_bytes`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

const PREFIX: &str = "sha256:";

fn is_lower_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Digest {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        match value.strip_prefix(PREFIX) {
            Some(hex) if is_lower_hex(hex) => Ok(()),
            _ => Err(InvalidValue::string(
                "digest",
                value,
                format!("does not match {DIGEST_PATTERN}"),
            )),
        }
    }

    /// Wraps 64 lowercase hex digits (a SHA-256 output) as `sha256:<hex>`.
    pub fn from_sha256_hex(hex: &str) -> Result<Self, InvalidValue> {
        if is_lower_hex(hex) {
            Ok(Self(format!("{PREFIX}{hex}")))
        } else {
            Err(InvalidValue::string(
                "sha256 hex",
                hex,
                "is not 64 lowercase hex digits ^[0-9a-f]{64}$",
            ))
        }
    }

    /// Wraps the 32 raw bytes of a SHA-256 output.
    pub fn from_sha256_bytes(bytes: [u8; 32]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(PREFIX.len() + 64);
        out.push_str(PREFIX);
        for b in bytes {
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0x0f)] as char);
        }
        Self(out)
    }

    /// The 64 hex digits after `sha256:`.
    pub fn hex(&self) -> &str {
        &self.0[PREFIX.len()..]
    }
}

string_newtype!(Digest, "Digest", {
    "type": "string",
    "pattern": DIGEST_PATTERN,
    "description": "A SHA-256 digest: `sha256:` and 64 lowercase hex digits.",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_bytes_matches_from_hex() {
        let d = Digest::from_sha256_bytes([0xab; 32]);
        assert_eq!(d, Digest::from_sha256_hex(&"ab".repeat(32)).unwrap());
        assert_eq!(d.hex(), "ab".repeat(32));
    }
}
