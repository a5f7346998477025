//! [`SandboxKey`]: the caller-chosen name of a get-or-create sandbox,
//! checked once, where it is made.
//!
//! Rule: a key is 1 to [`MAX_SANDBOX_KEY_BYTES`] bytes with no control
//! character (spaces, slashes and any printable Unicode are fine).

use std::fmt;

use crate::error::RequestError;

/// The longest sandbox key, in bytes.
pub const MAX_SANDBOX_KEY_BYTES: usize = 256;

/// A caller-chosen unique name for get-or-create.
///
/// It was checked when it was made ([`SandboxKey::new`]) or decoded, so a
/// backend, a wire server or a store takes a `SandboxKey` as it is. The JSON
/// form is a plain string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SandboxKey(String);

impl SandboxKey {
    /// Checks a key: refuses one that is empty, longer than
    /// [`MAX_SANDBOX_KEY_BYTES`] or holding a control character.
    pub fn new(key: impl Into<String>) -> Result<Self, RequestError> {
        let key = key.into();
        if key.is_empty() || key.len() > MAX_SANDBOX_KEY_BYTES || key.chars().any(char::is_control)
        {
            return Err(RequestError::Key { key });
        }
        Ok(SandboxKey(key))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for SandboxKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Read-only access to the text, so `Option<SandboxKey>::as_deref` gives an
/// `Option<&str>`; nothing can change the key through it.
impl std::ops::Deref for SandboxKey {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SandboxKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SandboxKey {
    type Error = RequestError;
    fn try_from(key: String) -> Result<Self, Self::Error> {
        SandboxKey::new(key)
    }
}

impl TryFrom<&str> for SandboxKey {
    type Error = RequestError;
    fn try_from(key: &str) -> Result<Self, Self::Error> {
        SandboxKey::new(key)
    }
}

impl From<SandboxKey> for String {
    fn from(key: SandboxKey) -> Self {
        key.0
    }
}

impl PartialEq<str> for SandboxKey {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SandboxKey {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl serde::Serialize for SandboxKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for SandboxKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        SandboxKey::new(key).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack -> the refusal it gets. Rule: a key is 1-256 bytes with no
    /// control character.
    #[test]
    fn hostile_keys_are_refused_where_they_are_made() {
        let long = "k".repeat(MAX_SANDBOX_KEY_BYTES + 1);
        let longest = "k".repeat(MAX_SANDBOX_KEY_BYTES);
        let rows: [(&str, &str, bool); 10] = [
            ("empty", "", true),
            ("257 bytes", &long, true),
            ("NUL", "a\0b", true),
            ("newline", "a\nb", true),
            ("escape", "\x1b[2J", true),
            ("DEL", "a\x7fb", true),
            ("spaces", "shared key with spaces", false),
            ("slashes", "team/project/main", false),
            ("unicode", "clé-日本", false),
            ("256 bytes", &longest, false),
        ];
        for (attack, text, refused) in rows {
            let made = SandboxKey::new(text);
            if refused {
                assert_eq!(
                    made.unwrap_err(),
                    RequestError::Key { key: text.into() },
                    "{attack}"
                );
            } else {
                assert_eq!(made.unwrap().as_str(), text, "{attack}");
            }
            // The decoder refuses what the constructor refuses.
            let json = serde_json::to_string(text).unwrap();
            let decoded = serde_json::from_str::<SandboxKey>(&json);
            assert_eq!(decoded.is_err(), refused, "{attack}: decoded {json}");
            if let Ok(key) = decoded {
                assert_eq!(serde_json::to_string(&key).unwrap(), json, "{attack}");
            }
        }
    }

    #[test]
    fn conversions_check_as_the_constructor_does() {
        assert!(SandboxKey::try_from("").is_err());
        assert!(SandboxKey::try_from(String::from("a\nb")).is_err());
        let key = SandboxKey::try_from("k").unwrap();
        assert_eq!(key.to_string(), "k");
        assert_eq!(String::from(key), "k");
    }
}
