//! Command arguments: ≤ 256 entries, each ≤ 65,536 bytes, no NUL.

use crate::InvalidValue;
use crate::bounds::{MAX_ARGUMENT_BYTES, MAX_ARGUMENTS};
use crate::macros::string_newtype;

fn validate_argument(field: &str, value: &str) -> Result<(), InvalidValue> {
    if value.len() > MAX_ARGUMENT_BYTES {
        return Err(InvalidValue::string(
            field.to_owned(),
            value,
            format!("exceeds {MAX_ARGUMENT_BYTES} bytes"),
        ));
    }
    if value.contains('\0') {
        return Err(InvalidValue::string(
            field.to_owned(),
            value,
            "contains NUL",
        ));
    }
    Ok(())
}

/// One command argument: at most 65,536 bytes, no NUL (bounds table:
/// "Command arguments | ≤ 256, each ≤ 65,536 bytes, no NUL"). May be empty.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Argument(String);

impl Argument {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        validate_argument("argument", value)
    }
}

string_newtype!(Argument, "Argument", {
    "type": "string",
    "maxLength": MAX_ARGUMENT_BYTES,
    "pattern": "^[^\\u0000]*$",
    "description": "At most 65,536 bytes (UTF-8), no NUL.",
});

/// The program a live process runs (`SandboxProcessRequest.executable`): an
/// [`Argument`] that is not empty.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Executable(String);

impl Executable {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        if value.is_empty() {
            return Err(InvalidValue::string("executable", value, "is empty"));
        }
        validate_argument("executable", value)
    }
}

string_newtype!(Executable, "Executable", {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ARGUMENT_BYTES,
    "pattern": "^[^\\u0000]+$",
});

/// A shell script (`SandboxCommand.shell`): an [`Argument`] that is not empty.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShellScript(String);

impl ShellScript {
    fn validate(value: &str) -> Result<(), InvalidValue> {
        if value.is_empty() {
            return Err(InvalidValue::string("shell", value, "is empty"));
        }
        validate_argument("shell", value)
    }
}

string_newtype!(ShellScript, "ShellScript", {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ARGUMENT_BYTES,
    "pattern": "^[^\\u0000]+$",
});

/// A list of arguments: at most 256 entries, each an [`Argument`]. May be
/// empty (`SandboxProcessRequest.arguments` follows the executable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Arguments(Vec<Argument>);

impl Arguments {
    /// Validates a list of strings, naming the offending index
    /// (`arguments[3]: … contains NUL`).
    pub fn new<I, S>(items: I) -> Result<Self, InvalidValue>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::validated("arguments", items)
    }

    fn validated<I, S>(field: &'static str, items: I) -> Result<Self, InvalidValue>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut out = Vec::new();
        for (index, item) in items.into_iter().enumerate() {
            if index == MAX_ARGUMENTS {
                return Err(InvalidValue::rule(
                    field,
                    format!("has more than {MAX_ARGUMENTS} entries"),
                ));
            }
            let item = item.into();
            validate_argument(&format!("{field}[{index}]"), &item)?;
            out.push(Argument(item));
        }
        Ok(Self(out))
    }

    /// The arguments.
    pub fn as_slice(&self) -> &[Argument] {
        &self.0
    }

    /// The arguments as string slices.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(Argument::as_str)
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Unwraps the arguments as strings.
    pub fn into_strings(self) -> Vec<String> {
        self.0.into_iter().map(Argument::into_string).collect()
    }
}

impl TryFrom<Vec<String>> for Arguments {
    type Error = InvalidValue;
    fn try_from(value: Vec<String>) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl serde::Serialize for Arguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = <Vec<String> as serde::Deserialize>::deserialize(deserializer)?;
        Self::new(items).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl schemars::JsonSchema for Arguments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Arguments".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "maxItems": MAX_ARGUMENTS,
            "items": generator.subschema_for::<Argument>(),
        })
    }
}

/// A command's full argument vector (`SandboxCommand.argv`): [`Arguments`]
/// with at least one entry, the program. The 256-entry bound counts the
/// program.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Argv(Arguments);

impl Argv {
    /// Validates a non-empty argument vector.
    pub fn new<I, S>(items: I) -> Result<Self, InvalidValue>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args = Arguments::validated("argv", items)?;
        if args.is_empty() {
            return Err(InvalidValue::rule(
                "argv",
                "is empty: the program is its first entry",
            ));
        }
        Ok(Self(args))
    }

    /// The program (the first entry).
    pub fn program(&self) -> &str {
        self.0.0[0].as_str()
    }

    /// All entries, the program first.
    pub fn arguments(&self) -> &Arguments {
        &self.0
    }

    /// Unwraps the entries.
    pub fn into_arguments(self) -> Arguments {
        self.0
    }
}

impl serde::Serialize for Argv {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Argv {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = <Vec<String> as serde::Deserialize>::deserialize(deserializer)?;
        Self::new(items).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl schemars::JsonSchema for Argv {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Argv".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_ARGUMENTS,
            "items": generator.subschema_for::<Argument>(),
        })
    }
}
