//! Environment variables: keys `^[A-Za-z_][A-Za-z0-9_]*$`, values without NUL.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};

use crate::InvalidValue;
use crate::bounds::ENV_KEY_PATTERN;
use crate::invalid::quote;
use crate::macros::string_newtype;

/// An environment variable name (bounds table: "Environment keys |
/// `^[A-Za-z_][A-Za-z0-9_]*$`").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnvKey(String);

impl EnvKey {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        let mut bytes = value.bytes();
        let first_ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
        if first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            Ok(())
        } else {
            Err(InvalidValue::string(
                "env_key",
                value,
                format!("does not match {ENV_KEY_PATTERN}"),
            ))
        }
    }
}

string_newtype!(EnvKey, "EnvKey", {
    "type": "string",
    "pattern": ENV_KEY_PATTERN,
});

/// An environment: a map from [`EnvKey`] to a value without NUL, ordered by
/// key (so its JSON form is deterministic).
///
/// The wire form is a JSON object. A duplicated key is refused at decode
/// rather than silently resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Environment(BTreeMap<EnvKey, String>);

/// Refuses a value holding NUL. The refusal names the key, never the
/// value: environment values carry secrets (`secret_env`), and an error
/// line is logged and shown where a secret must not be.
fn validate_env_value(key: &str, value: &str) -> Result<(), InvalidValue> {
    if value.contains('\0') {
        Err(InvalidValue::rule(
            format!("environment.{key}"),
            "its value contains NUL",
        ))
    } else {
        Ok(())
    }
}

impl Environment {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a variable, returning the previous value; refuses a value
    /// containing NUL.
    pub fn insert(
        &mut self,
        key: EnvKey,
        value: impl Into<String>,
    ) -> Result<Option<String>, InvalidValue> {
        let value = value.into();
        validate_env_value(key.as_str(), &value)?;
        Ok(self.0.insert(key, value))
    }

    /// Validates both a key and a value and sets the variable (builder style).
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Result<Self, InvalidValue> {
        self.insert(EnvKey::new(key)?, value)?;
        Ok(self)
    }

    /// The value of a variable.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Removes a variable, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.0.remove(key)
    }

    /// The variables in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&EnvKey, &str)> {
        self.0.iter().map(|(k, v)| (k, v.as_str()))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &EnvKey> {
        self.0.keys()
    }

    /// Adds every variable of `other`, its value replacing this one's where
    /// both set a key. Nothing is checked again: both are valid already.
    pub fn extend(&mut self, other: Environment) {
        self.0.extend(other.0);
    }

    /// The number of variables.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no variables.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The variables as a plain map.
    pub fn as_map(&self) -> &BTreeMap<EnvKey, String> {
        &self.0
    }
}

impl TryFrom<BTreeMap<String, String>> for Environment {
    type Error = InvalidValue;
    fn try_from(map: BTreeMap<String, String>) -> Result<Self, Self::Error> {
        let mut env = Environment::new();
        for (key, value) in map {
            env.insert(EnvKey::new(key)?, value)?;
        }
        Ok(env)
    }
}

impl serde::Serialize for Environment {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

struct EnvironmentVisitor;

impl<'de> Visitor<'de> for EnvironmentVisitor {
    type Value = Environment;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("environment: an object of string values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Environment, A::Error> {
        use serde::de::Error;
        let mut env = Environment::new();
        while let Some((key, value)) = map.next_entry::<String, String>()? {
            // Named as the member it sits in: the key is the refused value.
            let key = EnvKey::new(key).map_err(|e| A::Error::custom(e.in_field("environment")))?;
            if env.0.contains_key(&key) {
                return Err(A::Error::custom(InvalidValue::string(
                    "environment",
                    key.as_str(),
                    "is a duplicated key",
                )));
            }
            env.insert(key, value).map_err(A::Error::custom)?;
        }
        Ok(env)
    }
}

impl<'de> serde::Deserialize<'de> for Environment {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvironmentVisitor)
    }
}

impl schemars::JsonSchema for Environment {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Environment".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "propertyNames": { "pattern": ENV_KEY_PATTERN },
            "additionalProperties": { "type": "string", "pattern": "^[^\\u0000]*$" },
        })
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (k, v) in self.iter() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{k}={}", quote(v))?;
        }
        Ok(())
    }
}
