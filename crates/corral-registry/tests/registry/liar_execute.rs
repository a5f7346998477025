//! `execute`: "Runtime rejects a result with two exit causes or none; a
//! non-monotonic interval; stdout or stderr over `output_limit_bytes`".
//!
//! The stream lies are values the contract's types can hold, so the liar
//! returns them and the runtime must refuse them as
//! `SandboxProtocolInvalid{execute}` naming the stream and both sizes. The
//! exit and interval lies cannot be held by the types at all; the liar tells
//! them on the wire (see `liar::wire`).

use crate::liar;
use corral_contract::{
    ExitCause, ExitCode, Operation, OutputStream, RetentionMode, SandboxProvider, Timestamp,
};
use liar::fixtures::{
    active, assert_protocol_invalid, execute_request, memory_liar, protocol_invalid, refused,
    runtime,
};
use liar::lie::{Lie, WireLie};
use serde_json::{Value, json};

/// The per-stream limit of every command here.
const LIMIT: u64 = 4;

async fn stream_lie(lie: Lie) -> corral_contract::SandboxError {
    let liar = memory_liar().telling(lie);
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let error = refused(
        runtime
            .execute(execute_request(&instance, &["echo", "hi"], LIMIT))
            .await,
    );
    assert_eq!(ledger.calls(Operation::Execute), 1);
    error
}

/// An honest command through the same liar is accepted and bounded (the
/// baseline every lie below departs from).
#[tokio::test]
async fn execute_accepts_an_honest_bounded_result() {
    let runtime = runtime(memory_liar());
    let (_, instance) = active(&runtime, RetentionMode::EphemeralZdr).await;
    let result = runtime
        .execute(execute_request(&instance, &["echo", "hi"], LIMIT))
        .await
        .expect("an honest result is accepted");
    assert_eq!(result.exit, ExitCause::Code(ExitCode::SUCCESS));
    assert_eq!(&result.stdout.content[..], b"hi\n");
    assert!(!result.stdout.truncated);
}

/// "stdout … over `output_limit_bytes`".
#[tokio::test]
async fn execute_rejects_stdout_over_output_limit() {
    let error = stream_lie(Lie::OversizedStream(OutputStream::Stdout)).await;
    assert_protocol_invalid(
        &error,
        Operation::Execute,
        "stdout.content",
        "at most 4 bytes (output_limit_bytes)",
        "5 bytes",
    );
}

/// "stderr over `output_limit_bytes`".
#[tokio::test]
async fn execute_rejects_stderr_over_output_limit() {
    let error = stream_lie(Lie::OversizedStream(OutputStream::Stderr)).await;
    assert_protocol_invalid(
        &error,
        Operation::Execute,
        "stderr.content",
        "at most 4 bytes (output_limit_bytes)",
        "5 bytes",
    );
}

/// corral's rule behind the bound: a stream marked `truncated` holds
/// exactly `output_limit_bytes` bytes (it kept the first ones and dropped
/// the rest), so a short truncated stream is a lie about what was dropped.
#[tokio::test]
async fn execute_rejects_truncated_stream_that_is_not_full() {
    let error = stream_lie(Lie::TruncatedShort(OutputStream::Stdout)).await;
    assert_protocol_invalid(
        &error,
        Operation::Execute,
        "stdout.truncated",
        "a truncated stream holding exactly 4 bytes",
        "3 bytes",
    );
}

/// The wire text a refusal carries as `actual`, parsed.
fn wire_of(actual: &str) -> Value {
    serde_json::from_str(actual).expect("the refusal carries the wire text it refused")
}

/// "a result with two exit causes": the liar keeps the honest `code` and
/// adds a `signal`; the result's decoder refuses it and the call fails with
/// no result.
#[tokio::test]
async fn execute_rejects_two_exit_causes() {
    let error = stream_lie(Lie::Wire(WireLie::TwoExitCauses)).await;
    let (rule, actual) = protocol_invalid(&error, Operation::Execute, "exit");
    assert!(rule.contains("names 2 causes: code and signal"), "{rule}");
    assert_eq!(
        wire_of(actual)["exit"],
        json!({"code": 0, "signal": "SIGKILL"})
    );
}

/// "… or none".
#[tokio::test]
async fn execute_rejects_no_exit_cause() {
    let error = stream_lie(Lie::Wire(WireLie::NoExitCause)).await;
    let (rule, actual) = protocol_invalid(&error, Operation::Execute, "exit");
    assert!(rule.contains("names no cause"), "{rule}");
    assert_eq!(wire_of(actual)["exit"], json!({}));
}

/// "a non-monotonic interval": `finished_at` an hour before `started_at`.
#[tokio::test]
async fn execute_rejects_non_monotonic_interval() {
    let error = stream_lie(Lie::Wire(WireLie::NonMonotonicInterval)).await;
    let (rule, actual) = protocol_invalid(&error, Operation::Execute, "interval.finished_at");
    assert!(rule.contains("is before started_at"), "{rule}");
    let wire = wire_of(actual);
    let at = |key: &str| {
        Timestamp::parse(wire["interval"][key].as_str().expect("a timestamp string"))
            .expect("a canonical timestamp")
    };
    assert!(at("finished_at") < at("started_at"));
}
