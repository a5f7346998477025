//! [`Labels`]: the labels of a sandbox or snapshot, each pair checked once,
//! where the set is made.
//!
//! Rules (every backend's label store round-trips them): a key is 1 to
//! [`MAX_LABEL_KEY_BYTES`] bytes of `[A-Za-z0-9._/-]`; a value is at most
//! [`MAX_LABEL_VALUE_BYTES`] bytes with no control character.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};

use crate::error::RequestError;

/// The longest label key, in bytes.
pub const MAX_LABEL_KEY_BYTES: usize = 128;

/// The longest label value, in bytes.
pub const MAX_LABEL_VALUE_BYTES: usize = 1024;

/// Labels attached to a sandbox or snapshot: short keys, short values, used
/// to find them again (orphan sweeps, `list`) without any database.
///
/// Every pair was checked when it was added ([`Labels::insert`]) or decoded,
/// so a backend, a wire server or a store takes a `Labels` as it is. The JSON
/// form is an object of strings, ordered by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(BTreeMap<String, String>);

fn check(key: &str, value: &str) -> Result<(), RequestError> {
    let key_ok = !key.is_empty()
        && key.len() <= MAX_LABEL_KEY_BYTES
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
    if !key_ok {
        return Err(RequestError::LabelKey { key: key.into() });
    }
    if value.len() > MAX_LABEL_VALUE_BYTES || value.chars().any(char::is_control) {
        return Err(RequestError::LabelValue { key: key.into() });
    }
    Ok(())
}

impl Labels {
    /// No labels.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks a pair and sets it, returning the value it replaced.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Option<String>, RequestError> {
        let (key, value) = (key.into(), value.into());
        check(&key, &value)?;
        Ok(self.0.insert(key, value))
    }

    /// Checks a pair and sets it (builder style).
    pub fn with(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, RequestError> {
        self.insert(key, value)?;
        Ok(self)
    }

    /// Checks every pair and collects them; a later pair replaces an
    /// earlier one with the same key.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Self, RequestError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let mut labels = Labels::new();
        for (k, v) in pairs {
            labels.insert(k, v)?;
        }
        Ok(labels)
    }

    /// The value of a label.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.0.get(key)
    }

    /// Whether a label is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Removes a label, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.0.remove(key)
    }

    /// The labels in key order.
    pub fn iter(&self) -> std::collections::btree_map::Iter<'_, String, String> {
        self.0.iter()
    }

    /// The keys in order.
    pub fn keys(&self) -> std::collections::btree_map::Keys<'_, String, String> {
        self.0.keys()
    }

    /// Adds every label of `other`, its value replacing this one's where
    /// both set a key. Nothing is checked again: both are valid already.
    pub fn extend(&mut self, other: &Labels) {
        self.0
            .extend(other.0.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// Keeps only the labels `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.0.retain(|k, v| keep(k, v));
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether these labels hold every pair of `wanted`.
    pub fn matches(&self, wanted: &Labels) -> bool {
        wanted.iter().all(|(k, v)| self.0.get(k) == Some(v))
    }

    /// The labels as a plain map.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }
}

impl TryFrom<BTreeMap<String, String>> for Labels {
    type Error = RequestError;
    fn try_from(map: BTreeMap<String, String>) -> Result<Self, Self::Error> {
        for (k, v) in &map {
            check(k, v)?;
        }
        Ok(Labels(map))
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = std::collections::btree_map::IntoIter<String, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl std::ops::Index<&str> for Labels {
    type Output = String;
    /// The value of a label that is set; panics on one that is not, as a
    /// map's index does.
    fn index(&self, key: &str) -> &String {
        &self.0[key]
    }
}

impl serde::Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

struct LabelsVisitor;

impl<'de> Visitor<'de> for LabelsVisitor {
    type Value = Labels;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("labels: an object of string values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
        use serde::de::Error;
        let mut labels = Labels::new();
        while let Some((key, value)) = map.next_entry::<String, String>()? {
            if labels.contains_key(&key) {
                return Err(A::Error::custom(format!("label key {key:?} appears twice")));
            }
            labels.insert(key, value).map_err(A::Error::custom)?;
        }
        Ok(labels)
    }
}

impl<'de> serde::Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack -> the refusal it gets. Rule: a key is 1-128 bytes of
    /// `[A-Za-z0-9._/-]`; a value at most 1024 bytes, no control character.
    #[test]
    fn hostile_labels_are_refused_where_they_are_made() {
        let long_key = "k".repeat(MAX_LABEL_KEY_BYTES + 1);
        let long_value = "v".repeat(MAX_LABEL_VALUE_BYTES + 1);
        let rows: [(&str, &str, &str, Option<RequestError>); 12] = [
            (
                "empty key",
                "",
                "x",
                Some(RequestError::LabelKey { key: "".into() }),
            ),
            (
                "space in key",
                "a b",
                "x",
                Some(RequestError::LabelKey { key: "a b".into() }),
            ),
            (
                "'=' in key",
                "a=b",
                "x",
                Some(RequestError::LabelKey { key: "a=b".into() }),
            ),
            (
                "NUL in key",
                "a\0",
                "x",
                Some(RequestError::LabelKey { key: "a\0".into() }),
            ),
            (
                "non-ASCII key",
                "é",
                "x",
                Some(RequestError::LabelKey { key: "é".into() }),
            ),
            (
                "key over 128 bytes",
                &long_key,
                "x",
                Some(RequestError::LabelKey {
                    key: long_key.clone(),
                }),
            ),
            (
                "line break in value",
                "k",
                "a\nb",
                Some(RequestError::LabelValue { key: "k".into() }),
            ),
            (
                "NUL in value",
                "k",
                "a\0b",
                Some(RequestError::LabelValue { key: "k".into() }),
            ),
            (
                "escape in value",
                "k",
                "\x1b[2J",
                Some(RequestError::LabelValue { key: "k".into() }),
            ),
            (
                "value over 1024 bytes",
                "k",
                &long_value,
                Some(RequestError::LabelValue { key: "k".into() }),
            ),
            ("namespaced key", "corral.dev/owner", "me", None),
            ("empty value", "k", "", None),
        ];
        for (attack, key, value, expected) in rows {
            let refused = expected.is_some();
            let made = Labels::new().with(key, value);
            match expected {
                Some(refusal) => assert_eq!(made.unwrap_err(), refusal, "{attack}"),
                None => assert_eq!(
                    made.unwrap().get(key).map(String::as_str),
                    Some(value),
                    "{attack}"
                ),
            }
            // The decoder refuses what the constructor refuses.
            let json = serde_json::to_string(&BTreeMap::from([(key, value)])).unwrap();
            let decoded = serde_json::from_str::<Labels>(&json);
            assert_eq!(decoded.is_err(), refused, "{attack}: decoded {json}");
            if let Err(e) = decoded {
                assert!(!e.to_string().contains('\n'), "{attack}: {e}");
            }
        }
    }

    #[test]
    fn a_repeated_key_is_refused_at_decode_and_the_json_shape_is_a_plain_object() {
        let e = serde_json::from_str::<Labels>(r#"{"a":"1","a":"2"}"#).unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
        let labels = Labels::new()
            .with("b", "2")
            .unwrap()
            .with("a", "1")
            .unwrap();
        assert_eq!(
            serde_json::to_string(&labels).unwrap(),
            r#"{"a":"1","b":"2"}"#
        );
        let mut map = BTreeMap::new();
        map.insert("bad key".to_string(), "x".to_string());
        assert!(Labels::try_from(map).is_err());
    }
}
