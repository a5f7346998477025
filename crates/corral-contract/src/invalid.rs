//! The one error every validating constructor and decoder returns.

use std::borrow::Cow;
use std::fmt;

/// A value refused by a contract rule.
///
/// Every validating constructor (`new`, `TryFrom`, `FromStr`) and every decoder
/// (`serde::Deserialize`) of this crate refuses a malformed value with this
/// error. Its message names the field (or the type, for a bare value), shows the
/// offending value when there is one, and states the rule, for example
/// `digest: "sha256:zz" does not match ^sha256:[0-9a-f]{64}$`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidValue {
    field: Cow<'static, str>,
    value: Option<String>,
    rule: Cow<'static, str>,
}

impl InvalidValue {
    /// A refusal of a string value: the value is shown quoted (and shortened
    /// when long).
    pub fn string(
        field: impl Into<Cow<'static, str>>,
        value: &str,
        rule: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            field: field.into(),
            value: Some(quote(value)),
            rule: rule.into(),
        }
    }

    /// A refusal of a value shown through its `Display` form (numbers, booleans).
    pub fn value(
        field: impl Into<Cow<'static, str>>,
        value: impl fmt::Display,
        rule: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            field: field.into(),
            value: Some(value.to_string()),
            rule: rule.into(),
        }
    }

    /// A refusal that concerns a field as a whole (a cross-field rule, a
    /// missing member) rather than one shown value.
    pub fn rule(field: impl Into<Cow<'static, str>>, rule: impl Into<Cow<'static, str>>) -> Self {
        Self {
            field: field.into(),
            value: None,
            rule: rule.into(),
        }
    }

    /// The same refusal, with its field renamed (used when a value refused
    /// under its type name is known to sit in a named field).
    #[must_use]
    pub fn in_field(mut self, field: impl Into<Cow<'static, str>>) -> Self {
        self.field = field.into();
        self
    }

    /// The field (or type) whose rule was broken.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The offending value as rendered in the message, if one is shown.
    pub fn shown_value(&self) -> Option<&str> {
        self.value.as_deref()
    }

    /// The rule that was broken, as a phrase (`does not match ^…$`).
    pub fn broken_rule(&self) -> &str {
        &self.rule
    }
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{}: {} {}", self.field, value, self.rule),
            None => write!(f, "{}: {}", self.field, self.rule),
        }
    }
}

impl std::error::Error for InvalidValue {}

/// Renders a string for an error message: quoted and escaped, shortened to its
/// first 64 bytes (on a character boundary) with its total length when longer
/// than 80 bytes.
pub(crate) fn quote(value: &str) -> String {
    const SHOW_WHOLE: usize = 80;
    const SHOW_PREFIX: usize = 64;
    if value.len() <= SHOW_WHOLE {
        return format!("{value:?}");
    }
    let mut end = SHOW_PREFIX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &value[..end], value.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_field_value_and_rule() {
        let e = InvalidValue::string(
            "digest",
            "sha256:zz",
            "does not match ^sha256:[0-9a-f]{64}$",
        );
        assert_eq!(
            e.to_string(),
            r#"digest: "sha256:zz" does not match ^sha256:[0-9a-f]{64}$"#
        );
    }

    #[test]
    fn long_values_are_shortened_on_a_char_boundary() {
        let long = "é".repeat(100);
        let q = quote(&long);
        assert!(q.ends_with("(200 bytes)"), "{q}");
        assert!(q.len() < 100);
    }
}
