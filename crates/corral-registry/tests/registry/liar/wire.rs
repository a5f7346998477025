//! Lies only the wire can tell.
//!
//! The contract's types make two exit causes, no exit cause and a
//! non-monotonic interval unrepresentable: `ExitCause` is one enum variant
//! and `Interval::new` refuses `finished_at < started_at`. A provider that
//! speaks JSON can still send them. So the liar builds these results the
//! way such a provider would: it renders the honest result to its wire
//! form, breaks the JSON, and hands the JSON to the decoder a wire client
//! runs before a result can reach the runtime as a value
//! ([`decode`]). The refusal the tests observe is the decoder's, at the
//! point the contract places it ("`SandboxProtocolInvalid` (your result
//! failed decoding …)").
//!
//! [`deliver`] is that client's last step: a result that does not decode
//! never becomes a value; the call fails with `SandboxProtocolInvalid`
//! naming the operation, the field the decoder names, the decoder's rule as
//! `expected` and the wire text as `actual` — the same mapping the runtime
//! applies to an envelope that does not decode. The runtime's part is to
//! let that failure through as the call's outcome: no result, no retry.

use corral_contract::{Operation, ProtocolViolation, SandboxError, SandboxExecutionResult};
use serde_json::{Value, json};

use super::lie::WireLie;

/// The honest result's wire form, broken as `lie` says.
pub fn lying_json(result: &SandboxExecutionResult, lie: WireLie) -> Value {
    let mut wire = serde_json::to_value(result).expect("contract values always render");
    match lie {
        WireLie::TwoExitCauses => {
            let exit = wire["exit"]
                .as_object_mut()
                .expect("an exit renders as an object");
            // Keep the honest cause and add a second one it does not name.
            if exit.contains_key("code") {
                exit.insert("signal".to_owned(), json!("SIGKILL"));
            } else {
                exit.insert("code".to_owned(), json!(0));
            }
        }
        WireLie::NoExitCause => wire["exit"] = json!({}),
        WireLie::NonMonotonicInterval => {
            let interval = wire["interval"]
                .as_object_mut()
                .expect("an interval renders as an object");
            // Strictly backwards: finished an hour before it started.
            let started_at = corral_contract::Timestamp::parse(
                interval["started_at"]
                    .as_str()
                    .expect("a timestamp renders as a string"),
            )
            .expect("the honest start is canonical");
            let earlier = started_at
                .checked_add_millis(-3_600_000)
                .expect("an hour earlier is in range");
            interval.insert("finished_at".to_owned(), json!(earlier.to_string()));
        }
    }
    wire
}

/// Decodes a wire-form `execute` result as a wire client would.
pub fn decode(wire: Value) -> Result<SandboxExecutionResult, serde_json::Error> {
    serde_json::from_value(wire)
}

/// A wire client's answer to the lying JSON: the value if it decodes (it
/// never does), otherwise the decoder's refusal as `SandboxProtocolInvalid`.
pub fn deliver(
    result: &SandboxExecutionResult,
    lie: WireLie,
) -> Result<SandboxExecutionResult, SandboxError> {
    let wire = lying_json(result, lie);
    decode(wire.clone()).map_err(|refusal| {
        let rule = refusal.to_string();
        let field = rule.split_once(':').map_or("result", |(field, _)| field);
        ProtocolViolation::new(field, rule.clone(), wire.to_string()).into_error(Operation::Execute)
    })
}
