//! Internal macros that give validating newtypes one uniform surface.

/// Implements, for a `struct $name(String)` with an associated
/// `fn validate(&str) -> Result<(), InvalidValue>`: accessors, `Display`,
/// `AsRef<str>`, `FromStr`, `TryFrom<String>`, `TryFrom<&str>`,
/// `From<$name> for String`, `Serialize` (as the string), `Deserialize`
/// (refusing malformed values with the validation message) and `JsonSchema`
/// (carrying the given schema keywords, e.g. the pattern and limits).
macro_rules! string_newtype {
    ($name:ident, $schema_name:expr, $schema:tt) => {
        impl $name {
            /// Validates and wraps a string.
            pub fn new(value: impl Into<String>) -> Result<Self, $crate::InvalidValue> {
                let value = value.into();
                Self::validate(&value)?;
                Ok(Self(value))
            }

            /// The validated string.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Unwraps the validated string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl ::std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::InvalidValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::InvalidValue;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $crate::InvalidValue;
            fn try_from(value: &str) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                let value = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                Self::new(value).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed($schema_name)
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!($schema)
            }
        }
    };
}

/// Declares a bounded unsigned integer newtype whose constructor and decoder
/// refuse values outside `$min..=$max`, naming `$field` in the message.
macro_rules! bounded_integer {
    (
        $(#[$meta:meta])*
        $name:ident, field = $field:literal, min = $min:expr, max = $max:expr
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u64);

        impl $name {
            /// The smallest accepted value.
            pub const MIN: $name = $name($min);
            /// The largest accepted value.
            pub const MAX: $name = $name($max);

            /// Validates and wraps a value.
            pub fn new(value: u64) -> Result<Self, $crate::InvalidValue> {
                if value.checked_sub($min).is_none() {
                    return Err($crate::InvalidValue::value(
                        $field,
                        value,
                        format!("is below the minimum {}", $min),
                    ));
                }
                if value > $max {
                    return Err($crate::InvalidValue::value(
                        $field,
                        value,
                        format!("exceeds the maximum {}", $max),
                    ));
                }
                Ok(Self(value))
            }

            /// The wrapped value.
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl TryFrom<u64> for $name {
            type Error = $crate::InvalidValue;
            fn try_from(value: u64) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for u64 {
            fn from(value: $name) -> u64 {
                value.0
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_u64(self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = deserializer.deserialize_u64($crate::macros::IntegerVisitor($field))?;
                Self::new(value).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "integer",
                    "minimum": $min,
                    "maximum": $max,
                })
            }
        }
    };
}

/// A serde visitor accepting any JSON integer as `u64`, refusing negative and
/// fractional numbers with a message naming the field.
pub(crate) struct IntegerVisitor(pub(crate) &'static str);

impl serde::de::Visitor<'_> for IntegerVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: a non-negative integer", self.0)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| {
            E::custom(crate::InvalidValue::value(
                self.0,
                v,
                "is negative: a non-negative integer is required",
            ))
        })
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        Err(E::custom(crate::InvalidValue::value(
            self.0,
            v,
            "is not an integer",
        )))
    }
}

pub(crate) use bounded_integer;
pub(crate) use string_newtype;

/// Declares a closed vocabulary: a fieldless enum whose wire form is one
/// string per variant. Generates `ALL`, `as_str`, `Display`, `FromStr`,
/// `Serialize`, a `Deserialize` that refuses unknown strings with a message
/// naming `$field` and the allowed values, and a `JsonSchema` listing them.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $field:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every member, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses the wire spelling.
            pub fn parse(text: &str) -> Result<Self, $crate::InvalidValue> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == text)
                    .ok_or_else(|| {
                        let allowed: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                        $crate::InvalidValue::string(
                            $field,
                            text,
                            format!("is not one of {}", allowed.join(", ")),
                        )
                    })
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::InvalidValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                Self::parse(&text).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({
                    "type": "string",
                    "enum": [$($text),+],
                })
            }
        }
    };
}

pub(crate) use vocabulary;
