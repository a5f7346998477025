//! Exit codes, signal names, and the exit encodings of `execute` and
//! `openProcess`.
//!
//! Wire form of an exit: an object with exactly one key —
//! `{"code": 0}`, `{"signal": "SIGKILL"}`, or (for `execute` only)
//! `{"timed_out": true}`. Two keys or none are refused at decode.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::InvalidValue;
use crate::macros::{bounded_integer, vocabulary};

bounded_integer!(
    /// A process exit code, 0–255.
    ExitCode,
    field = "code",
    min = 0,
    max = 255
);

impl ExitCode {
    /// Success.
    pub const SUCCESS: ExitCode = ExitCode(0);

    /// The code as `u8`.
    pub const fn as_u8(self) -> u8 {
        self.0 as u8
    }

    /// Whether the code is 0.
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }
}

impl From<u8> for ExitCode {
    fn from(value: u8) -> Self {
        Self(u64::from(value))
    }
}

vocabulary! {
    /// A terminating signal, by its Linux name (the standard signals 1–31).
    pub enum SignalName: "signal" {
        /// 1.
        Sighup = "SIGHUP",
        /// 2.
        Sigint = "SIGINT",
        /// 3.
        Sigquit = "SIGQUIT",
        /// 4.
        Sigill = "SIGILL",
        /// 5.
        Sigtrap = "SIGTRAP",
        /// 6.
        Sigabrt = "SIGABRT",
        /// 7.
        Sigbus = "SIGBUS",
        /// 8.
        Sigfpe = "SIGFPE",
        /// 9.
        Sigkill = "SIGKILL",
        /// 10.
        Sigusr1 = "SIGUSR1",
        /// 11.
        Sigsegv = "SIGSEGV",
        /// 12.
        Sigusr2 = "SIGUSR2",
        /// 13.
        Sigpipe = "SIGPIPE",
        /// 14.
        Sigalrm = "SIGALRM",
        /// 15.
        Sigterm = "SIGTERM",
        /// 16.
        Sigstkflt = "SIGSTKFLT",
        /// 17.
        Sigchld = "SIGCHLD",
        /// 18.
        Sigcont = "SIGCONT",
        /// 19.
        Sigstop = "SIGSTOP",
        /// 20.
        Sigtstp = "SIGTSTP",
        /// 21.
        Sigttin = "SIGTTIN",
        /// 22.
        Sigttou = "SIGTTOU",
        /// 23.
        Sigurg = "SIGURG",
        /// 24.
        Sigxcpu = "SIGXCPU",
        /// 25.
        Sigxfsz = "SIGXFSZ",
        /// 26.
        Sigvtalrm = "SIGVTALRM",
        /// 27.
        Sigprof = "SIGPROF",
        /// 28.
        Sigwinch = "SIGWINCH",
        /// 29.
        Sigio = "SIGIO",
        /// 30.
        Sigpwr = "SIGPWR",
        /// 31.
        Sigsys = "SIGSYS",
    }
}

impl SignalName {
    /// The Linux signal number (1–31).
    pub fn number(self) -> i32 {
        let index = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        index as i32 + 1
    }

    /// The name of a Linux signal number 1–31.
    pub fn from_number(number: i32) -> Option<Self> {
        let index = usize::try_from(number.checked_sub(1)?).ok()?;
        Self::ALL.get(index).copied()
    }
}

vocabulary! {
    /// The control signals a live process accepts: "`SIGINT`, `SIGTERM`, and
    /// `SIGKILL` are the vocabulary; only SIGTERM is sent today."
    pub enum ControlSignal: "signal" {
        /// Interrupt.
        Sigint = "SIGINT",
        /// Terminate (the one the Runner sends today).
        Sigterm = "SIGTERM",
        /// Kill.
        Sigkill = "SIGKILL",
    }
}

impl ControlSignal {
    /// The Linux signal number.
    pub fn number(self) -> i32 {
        SignalName::from(self).number()
    }
}

impl From<ControlSignal> for SignalName {
    fn from(value: ControlSignal) -> Self {
        match value {
            ControlSignal::Sigint => SignalName::Sigint,
            ControlSignal::Sigterm => SignalName::Sigterm,
            ControlSignal::Sigkill => SignalName::Sigkill,
        }
    }
}

/// The raw exit object before the "exactly one cause" rule.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExit {
    #[serde(default)]
    code: Option<ExitCode>,
    #[serde(default)]
    signal: Option<SignalName>,
    #[serde(default)]
    timed_out: Option<bool>,
}

/// The single cause an exit object names.
pub(crate) enum OneCause {
    Code(ExitCode),
    Signal(SignalName),
    TimedOut,
}

impl RawExit {
    /// Applies "exactly one cause" (`allow_timeout: false` refuses
    /// `timed_out`, which only `execute` reports).
    pub(crate) fn single(
        self,
        field: &'static str,
        allow_timeout: bool,
    ) -> Result<OneCause, InvalidValue> {
        if self.timed_out == Some(false) {
            return Err(InvalidValue::rule(
                format!("{field}.timed_out"),
                "is false (present only as true; omit it otherwise)",
            ));
        }
        if self.timed_out.is_some() && !allow_timeout {
            return Err(InvalidValue::rule(
                field,
                "names timed_out, which only an execute result reports",
            ));
        }
        let present: Vec<&str> = [
            self.code.map(|_| "code"),
            self.signal.map(|_| "signal"),
            self.timed_out.map(|_| "timed_out"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let keys = if allow_timeout {
            "code, signal or timed_out"
        } else {
            "code or signal"
        };
        match (present.len(), self.code, self.signal) {
            (1, Some(code), _) => Ok(OneCause::Code(code)),
            (1, _, Some(signal)) => Ok(OneCause::Signal(signal)),
            (1, _, _) => Ok(OneCause::TimedOut),
            (0, _, _) => Err(InvalidValue::rule(
                field,
                format!("names no cause (exactly one of {keys} is required)"),
            )),
            _ => Err(InvalidValue::rule(
                field,
                format!(
                    "names {} causes: {} (exactly one of {keys} is required)",
                    present.len(),
                    present.join(" and ")
                ),
            )),
        }
    }
}

/// How a live process ended: an exit code (0–255) **xor** a signal name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcessExit {
    /// It exited with a code.
    Code(ExitCode),
    /// A signal ended it.
    Signal(SignalName),
}

impl fmt::Display for ProcessExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(c) => write!(f, "code {c}"),
            Self::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

#[derive(Serialize)]
struct CodeOut {
    code: ExitCode,
}

#[derive(Serialize)]
struct SignalOut {
    signal: SignalName,
}

#[derive(Serialize)]
struct TimedOutOut {
    timed_out: bool,
}

impl Serialize for ProcessExit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Code(code) => CodeOut { code }.serialize(serializer),
            Self::Signal(signal) => SignalOut { signal }.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ProcessExit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawExit::deserialize(deserializer)?;
        match raw
            .single("exit", false)
            .map_err(serde::de::Error::custom)?
        {
            OneCause::Code(c) => Ok(Self::Code(c)),
            OneCause::Signal(s) => Ok(Self::Signal(s)),
            OneCause::TimedOut => Err(serde::de::Error::custom(
                "exit: timed_out is not a process exit",
            )),
        }
    }
}

pub(crate) fn exit_schema(
    generator: &mut schemars::SchemaGenerator,
    with_timeout: bool,
) -> schemars::Schema {
    let code = generator.subschema_for::<ExitCode>();
    let signal = generator.subschema_for::<SignalName>();
    let mut one_of = vec![
        serde_json::json!({
            "type": "object", "required": ["code"], "additionalProperties": false,
            "properties": { "code": code },
        }),
        serde_json::json!({
            "type": "object", "required": ["signal"], "additionalProperties": false,
            "properties": { "signal": signal },
        }),
    ];
    if with_timeout {
        one_of.push(serde_json::json!({
            "type": "object", "required": ["timed_out"], "additionalProperties": false,
            "properties": { "timed_out": { "const": true } },
        }));
    }
    schemars::json_schema!({ "oneOf": one_of })
}

impl schemars::JsonSchema for ProcessExit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProcessExit".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        exit_schema(generator, false)
    }
}

/// How one `execute` command ended: exactly one cause.
///
/// An output flood is not a cause: output beyond `output_limit_bytes` is
/// dropped and the stream marked `truncated` while the command runs on (a
/// provider that cannot drain may instead fail the call with
/// `SandboxOutputLimitExceeded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitCause {
    /// The command exited with a code.
    Code(ExitCode),
    /// A signal ended the command (not the provider's timeout).
    Signal(SignalName),
    /// The provider ended the command at `timeout_seconds`.
    TimedOut,
}

impl fmt::Display for ExitCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(c) => write!(f, "code {c}"),
            Self::Signal(s) => write!(f, "signal {s}"),
            Self::TimedOut => f.write_str("timed_out"),
        }
    }
}

impl From<ProcessExit> for ExitCause {
    fn from(value: ProcessExit) -> Self {
        match value {
            ProcessExit::Code(c) => Self::Code(c),
            ProcessExit::Signal(s) => Self::Signal(s),
        }
    }
}

impl Serialize for ExitCause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Code(code) => CodeOut { code }.serialize(serializer),
            Self::Signal(signal) => SignalOut { signal }.serialize(serializer),
            Self::TimedOut => TimedOutOut { timed_out: true }.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ExitCause {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawExit::deserialize(deserializer)?;
        Ok(
            match raw.single("exit", true).map_err(serde::de::Error::custom)? {
                OneCause::Code(c) => Self::Code(c),
                OneCause::Signal(s) => Self::Signal(s),
                OneCause::TimedOut => Self::TimedOut,
            },
        )
    }
}

impl schemars::JsonSchema for ExitCause {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExitCause".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        exit_schema(generator, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_numbers_are_linux_numbers() {
        assert_eq!(SignalName::Sigkill.number(), 9);
        assert_eq!(SignalName::Sigterm.number(), 15);
        assert_eq!(SignalName::Sigsys.number(), 31);
        assert_eq!(SignalName::from_number(2), Some(SignalName::Sigint));
        assert_eq!(SignalName::from_number(0), None);
        assert_eq!(SignalName::from_number(32), None);
    }
}
