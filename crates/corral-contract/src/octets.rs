//! Bytes on the wire: standard base64 (RFC 4648 §4, padded), strict.
//!
//! corral carries every byte payload (file content, stdin, stdout, stderr) as
//! a base64 string: the payloads are arbitrary bytes, and a JSON string must
//! be valid Unicode. Decoding is strict: the alphabet `A–Z a–z 0–9 + /`,
//! length a multiple of four, `=` padding only at the end, and the unused bits
//! of the last symbol zero — so every byte string has exactly one encoding and
//! decode → encode is byte-identical.

use std::fmt;
use std::ops::Deref;

use crate::InvalidValue;
use crate::bounds::{MAX_FILE_CONTENT_BYTES, MAX_OUTPUT_LIMIT_BYTES, MAX_STDIN_BYTES};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The schema pattern of a canonical base64 string.
pub const BASE64_PATTERN: &str = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// Encodes bytes as padded standard base64.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let symbols = chunk.len() + 1;
        for i in 0..4 {
            if i < symbols {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn sextet(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    }))
}

/// Decodes padded standard base64, refusing every non-canonical form.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, InvalidValue> {
    let refuse = |rule: &'static str| Err(InvalidValue::string("base64", text, rule));
    let b = text.as_bytes();
    if !b.len().is_multiple_of(4) {
        return refuse("has a length that is not a multiple of 4");
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    let quads = b.len() / 4;
    for (q, quad) in b.chunks(4).enumerate() {
        let last = q + 1 == quads;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return refuse("has = padding other than at the end");
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            match sextet(c) {
                Some(v) => n = (n << 6) | v,
                None => return refuse("has a character outside the base64 alphabet"),
            }
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        let keep = 3 - pad;
        if bytes[keep..].iter().any(|&x| x != 0) {
            return refuse("is not canonical (non-zero unused bits before the padding)");
        }
        out.extend_from_slice(&bytes[..keep]);
    }
    Ok(out)
}

/// Arbitrary bytes, carried on the wire as canonical base64.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Octets(Vec<u8>);

impl Octets {
    /// Wraps bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Unwraps the bytes.
    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }

    /// The number of bytes, as the `u64` the contract's bounds use.
    pub fn len_u64(&self) -> u64 {
        self.0.len() as u64
    }

    /// The canonical base64 form.
    pub fn to_base64(&self) -> String {
        base64_encode(&self.0)
    }

    /// Decodes canonical base64.
    pub fn from_base64(text: &str) -> Result<Self, InvalidValue> {
        base64_decode(text).map(Self)
    }
}

impl fmt::Debug for Octets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(&self.0) {
            Ok(text) => write!(f, "Octets({})", crate::invalid::quote(text)),
            Err(_) => write!(f, "Octets({} bytes)", self.0.len()),
        }
    }
}

impl Deref for Octets {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Octets {
    fn from(value: Vec<u8>) -> Self {
        Self(value)
    }
}

impl From<&[u8]> for Octets {
    fn from(value: &[u8]) -> Self {
        Self(value.to_vec())
    }
}

impl From<&str> for Octets {
    fn from(value: &str) -> Self {
        Self(value.as_bytes().to_vec())
    }
}

impl serde::Serialize for Octets {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_base64())
    }
}

impl<'de> serde::Deserialize<'de> for Octets {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_base64(&text).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl schemars::JsonSchema for Octets {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Octets".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "contentEncoding": "base64",
            "pattern": BASE64_PATTERN,
        })
    }
}

macro_rules! bounded_octets {
    ($(#[$meta:meta])* $name:ident, field = $field:literal, max = $max:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
        pub struct $name(Octets);

        impl $name {
            /// The largest accepted length, in bytes.
            pub const MAX_BYTES: u64 = $max;

            /// Validates the length and wraps the bytes.
            pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, InvalidValue> {
                let bytes = bytes.into();
                if bytes.len() as u64 > $max {
                    return Err(InvalidValue::value(
                        $field,
                        format_args!("of {} bytes", bytes.len()),
                        format!("exceeds {} bytes", $max),
                    ));
                }
                Ok(Self(Octets(bytes)))
            }

            /// The bytes.
            pub fn as_octets(&self) -> &Octets {
                &self.0
            }

            /// Unwraps the bytes.
            pub fn into_vec(self) -> Vec<u8> {
                self.0.into_vec()
            }
        }

        impl Deref for $name {
            type Target = [u8];
            fn deref(&self) -> &[u8] {
                &self.0
            }
        }

        impl TryFrom<Vec<u8>> for $name {
            type Error = InvalidValue;
            fn try_from(value: Vec<u8>) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<Octets> for $name {
            type Error = InvalidValue;
            fn try_from(value: Octets) -> Result<Self, Self::Error> {
                Self::new(value.into_vec())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
                // Refuse before decoding: the encoded length bounds the decoded one.
                let max_text = ($max as usize).div_ceil(3) * 4;
                if text.len() > max_text {
                    return Err(D::Error::custom(InvalidValue::value(
                        $field,
                        format_args!("of {} base64 characters", text.len()),
                        format!("exceeds {} bytes", $max),
                    )));
                }
                let bytes = base64_decode(&text).map_err(|e| D::Error::custom(e.in_field($field)))?;
                Self::new(bytes).map_err(D::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "contentEncoding": "base64",
                    "pattern": BASE64_PATTERN,
                    "maxLength": ($max as usize).div_ceil(3) * 4,
                    "description": format!("Base64 of at most {} bytes.", $max),
                })
            }
        }
    };
}

bounded_octets!(
    /// The content of one file: at most 16 MiB (bounds table: "Any file
    /// content | 16 MiB").
    FileContent,
    field = "content",
    max = MAX_FILE_CONTENT_BYTES
);

bounded_octets!(
    /// The stdin of one `execute` command: at most 16 MiB (corral's bound,
    /// mirroring the file-content bound; the contract is silent).
    StdinBytes,
    field = "stdin",
    max = MAX_STDIN_BYTES
);

bounded_octets!(
    /// Captured output of one stream of one `execute` command: at most 16 MiB
    /// (bounds table: "`execute.output_limit_bytes` | ≤ 16 MiB, per stream").
    /// The command's own `output_limit_bytes` is checked by
    /// `SandboxExecutionResult::validate_against`.
    OutputBytes,
    field = "output",
    max = MAX_OUTPUT_LIMIT_BYTES
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
            assert_eq!(base64_decode(encoded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).collect();
        for len in 0..all.len() {
            let enc = base64_encode(&all[..len]);
            assert_eq!(base64_decode(&enc).unwrap(), &all[..len]);
        }
    }

    #[test]
    fn non_canonical_forms_are_refused() {
        for bad in [
            "Zg", "Zg=", "Zh==", "Zm9=", "Z===", "Zg==Zg==", "Zm9v\n", "Zm-v", "=Zm9",
        ] {
            assert!(base64_decode(bad).is_err(), "{bad}");
        }
    }
}
