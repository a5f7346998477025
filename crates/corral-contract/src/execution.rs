//! `execute`'s result: one settlement with exactly one exit cause.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ProtocolViolation;
use crate::{ExitCause, InvalidValue, OutputBytes, SandboxCommand, Timestamp};

/// A monotonic interval: `finished_at` is not before `started_at` (refused
/// otherwise, on construction and at decode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawInterval")]
pub struct Interval {
    started_at: Timestamp,
    finished_at: Timestamp,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Interval")]
struct RawInterval {
    started_at: Timestamp,
    finished_at: Timestamp,
}

impl TryFrom<RawInterval> for Interval {
    type Error = InvalidValue;
    fn try_from(raw: RawInterval) -> Result<Self, Self::Error> {
        Self::new(raw.started_at, raw.finished_at)
    }
}

impl Interval {
    /// Validates `started_at ≤ finished_at`.
    pub fn new(started_at: Timestamp, finished_at: Timestamp) -> Result<Self, InvalidValue> {
        if finished_at < started_at {
            return Err(InvalidValue::string(
                "interval.finished_at",
                &finished_at.to_string(),
                format!("is before started_at {started_at} (the interval must be monotonic)"),
            ));
        }
        Ok(Self {
            started_at,
            finished_at,
        })
    }

    /// When the command started.
    pub fn started_at(&self) -> Timestamp {
        self.started_at
    }

    /// When the command settled.
    pub fn finished_at(&self) -> Timestamp {
        self.finished_at
    }

    /// The length in milliseconds.
    pub fn duration_millis(&self) -> i64 {
        self.finished_at.millis_since(self.started_at)
    }
}

/// What one stream produced: at most `output_limit_bytes` bytes, and whether
/// more were produced and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamCapture {
    /// The kept bytes (base64 on the wire).
    pub content: OutputBytes,
    /// Whether bytes beyond the limit were dropped. When true, `content`
    /// holds exactly `output_limit_bytes` bytes.
    pub truncated: bool,
}

/// The settlement of one `execute` call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxExecutionResult {
    /// Exactly one exit cause.
    pub exit: ExitCause,
    /// When it started and settled (monotonic).
    pub interval: Interval,
    /// Standard output.
    pub stdout: StreamCapture,
    /// Standard error.
    pub stderr: StreamCapture,
}

impl SandboxExecutionResult {
    /// The Runner's check of a result against the command that produced it:
    /// each stream holds at most `output_limit_bytes` bytes, and a stream
    /// marked `truncated` holds exactly that many. (Exactly one exit cause and
    /// a monotonic interval are guaranteed by the types.)
    pub fn validate_against(&self, command: &SandboxCommand) -> Result<(), ProtocolViolation> {
        let limit = command.output_limit_bytes.get();
        for (name, stream) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let len = stream.content.len() as u64;
            if len > limit {
                return Err(ProtocolViolation::new(
                    format!("{name}.content"),
                    format!("at most {limit} bytes (output_limit_bytes)"),
                    format!("{len} bytes"),
                ));
            }
            if stream.truncated && len != limit {
                return Err(ProtocolViolation::new(
                    format!("{name}.truncated"),
                    format!("a truncated stream holding exactly {limit} bytes"),
                    format!("{len} bytes"),
                ));
            }
        }
        Ok(())
    }
}
