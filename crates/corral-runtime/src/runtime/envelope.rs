//! The capability envelope: decoded again at construction, unchanging after.
//!
//! "`capabilities` | Advertise one honest envelope, unchanging for this
//! revision | Runtime rejects: a cross-field violation at decode."
//!
//! [`redecode`] puts the provider's envelope through its wire form and the
//! contract's decoder again, so the runtime holds an envelope that passed
//! every cross-field rule no matter how the provider built it (a wire client
//! decodes what a remote provider sent; a compiled-in adapter may hold one
//! built in memory). [`unchanged`] holds the provider to the envelope the
//! runtime decoded: every call first compares the provider's current
//! envelope with it, and a difference is `SandboxProtocolInvalid` naming the
//! `capabilities` operation, the first differing field and both values.

use corral_contract::{
    CapabilityField, Operation, ProtocolViolation, SandboxError, SandboxProviderCapabilities,
};
use serde_json::Value;

fn violation(field: &str, expected: impl Into<String>, actual: impl Into<String>) -> SandboxError {
    ProtocolViolation::new(field, expected, actual).into_error(Operation::Capabilities)
}

/// Decodes an envelope from its wire form, refusing a cross-field violation
/// with the field it names.
pub(crate) fn decode(wire: Value) -> Result<SandboxProviderCapabilities, SandboxError> {
    serde_json::from_value(wire.clone()).map_err(|error| {
        let message = error.to_string();
        // A refusal names the envelope field it refuses; anything else is
        // reported against the envelope as a whole.
        let field = message
            .split_once(':')
            .map(|(field, _)| field)
            .filter(|field| CapabilityField::parse(field).is_ok())
            .unwrap_or("capabilities")
            .to_owned();
        violation(
            &field,
            "an envelope that decodes under every cross-field rule",
            message,
        )
    })
}

/// The provider's envelope, through its wire form and the decoder again.
pub(crate) fn redecode(
    capabilities: &SandboxProviderCapabilities,
) -> Result<SandboxProviderCapabilities, SandboxError> {
    let wire = serde_json::to_value(capabilities)
        .map_err(|e| violation("capabilities", "a serializable envelope", e.to_string()))?;
    decode(wire)
}

/// Refuses a provider whose envelope differs from the one the runtime
/// decoded, naming the first differing field.
pub(crate) fn unchanged(
    decoded: &SandboxProviderCapabilities,
    current: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    if decoded == current {
        return Ok(());
    }
    let (Ok(Value::Object(expected)), Ok(Value::Object(actual))) =
        (serde_json::to_value(decoded), serde_json::to_value(current))
    else {
        return Err(violation(
            "capabilities",
            "the envelope advertised at construction",
            "an envelope that does not serialize as an object",
        ));
    };
    let differing = expected
        .iter()
        .find(|(field, value)| actual.get(field.as_str()) != Some(*value));
    match differing {
        Some((field, value)) => Err(violation(
            field,
            value.to_string(),
            actual
                .get(field.as_str())
                .map_or_else(|| "absent".to_owned(), Value::to_string),
        )),
        None => Err(violation(
            "capabilities",
            "the envelope advertised at construction",
            "a different envelope",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cross_field_violation_at_decode_is_refused_naming_the_field() {
        let mut wire = serde_json::to_value(SandboxProviderCapabilities::minimum()).unwrap();
        wire["snapshot_clone"] = Value::Bool(true);
        let err = decode(wire).unwrap_err();
        match err {
            SandboxError::SandboxProtocolInvalid {
                operation,
                field,
                actual,
                ..
            } => {
                assert_eq!(operation, Operation::Capabilities);
                assert_eq!(field, "snapshot_clone");
                assert!(actual.contains("snapshots is false"), "{actual}");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn a_malformed_envelope_is_refused_against_the_envelope_as_a_whole() {
        let mut wire = serde_json::to_value(SandboxProviderCapabilities::minimum()).unwrap();
        wire["tiers"] = Value::String("container".into());
        let err = decode(wire).unwrap_err();
        assert!(
            matches!(&err, SandboxError::SandboxProtocolInvalid { field, .. } if field == "capabilities"),
            "{err}"
        );
    }

    #[test]
    fn a_valid_envelope_survives_its_wire_form_unchanged() {
        let minimum = SandboxProviderCapabilities::minimum();
        assert_eq!(redecode(&minimum).unwrap(), minimum);
    }

    #[test]
    fn a_changed_envelope_names_the_first_differing_field_and_both_values() {
        let before = SandboxProviderCapabilities::minimum();
        let mut declaration = before.declaration().clone();
        declaration.tiers = vec![corral_contract::Tier::Microvm];
        let after = SandboxProviderCapabilities::new(declaration).unwrap();
        let err = unchanged(&before, &after).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SandboxProtocolInvalid: operation capabilities: field tiers: \
             expected [\"container\"], actual [\"microvm\"]"
        );
    }
}
