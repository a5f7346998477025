//! Why a case failed: one precise line.

use std::fmt;

use corral_contract::{ErrorKind, SandboxError};

/// The reason a case failed. Always one line: embedded newlines (command
/// output, multi-line messages) are shown as `\n`, and the text is capped so
/// a flood of output never becomes a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure(String);

/// The longest reason kept, in bytes (cut at a character boundary).
const MAX_REASON_BYTES: usize = 600;

impl Failure {
    /// A failure with this reason.
    pub(crate) fn new(reason: impl fmt::Display) -> Self {
        Self(one_line(&reason.to_string(), MAX_REASON_BYTES))
    }

    /// A failed step: `<step>: <error>`.
    pub(crate) fn step(step: impl fmt::Display, error: impl fmt::Display) -> Self {
        Self::new(format_args!("{step}: {error}"))
    }

    /// The reason.
    pub(crate) fn into_reason(self) -> String {
        self.0
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` on one line and at most `max` bytes: `\r` and `\n` become the two
/// characters `\n`, a longer text ends in `…`.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text
        .trim_end()
        .replace("\r\n", "\n")
        .replace(['\r', '\n'], "\\n");
    if flat.len() <= max {
        return flat;
    }
    let mut cut = max;
    while !flat.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &flat[..cut])
}

/// Bytes as text for a reason: lossy UTF-8, one line, at most 120 bytes.
pub(crate) fn shown(bytes: &[u8]) -> String {
    format!("{:?}", one_line(&String::from_utf8_lossy(bytes), 120))
}

/// Fails with `reason` unless `condition` holds.
pub(crate) fn ensure(condition: bool, reason: impl FnOnce() -> String) -> Result<(), Failure> {
    if condition {
        Ok(())
    } else {
        Err(Failure::new(reason()))
    }
}

/// Requires `result` to be a refusal of kind `kind`; `step` names what was
/// attempted. Returns the error for further checks.
pub(crate) fn expect_refusal<T>(
    step: &str,
    result: Result<T, SandboxError>,
    kind: ErrorKind,
) -> Result<SandboxError, Failure> {
    match result {
        Ok(_) => Err(Failure::new(format_args!(
            "{step}: succeeded, expected {kind}"
        ))),
        Err(e) if e.kind() == kind => Ok(e),
        Err(e) => Err(Failure::new(format_args!(
            "{step}: expected {kind}, got {e}"
        ))),
    }
}

/// Requires `result` to be any refusal; `step` names what was attempted.
pub(crate) fn expect_refused<T>(
    step: &str,
    result: Result<T, SandboxError>,
) -> Result<SandboxError, Failure> {
    match result {
        Ok(_) => Err(Failure::new(format_args!(
            "{step}: succeeded, expected a refusal"
        ))),
        Err(e) => Ok(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_contract::{InstanceId, Requirement};

    #[test]
    fn reasons_are_one_bounded_line() {
        let f = Failure::step("execute `cat x`", "line one\nline two\r\n");
        assert_eq!(f.to_string(), "execute `cat x`: line one\\nline two");
        let long = Failure::new("é".repeat(1000));
        assert!(long.to_string().len() <= MAX_REASON_BYTES + '…'.len_utf8());
        assert!(long.to_string().ends_with('…'));
        assert_eq!(shown(b"a\nb"), "\"a\\\\nb\"");
    }

    #[test]
    fn refusals_are_checked_by_kind() {
        let not_found = SandboxError::SandboxInstanceNotFound {
            instance_id: InstanceId::new("i-1").unwrap(),
        };
        let ok: Result<(), SandboxError> = Ok(());
        let e = expect_refusal("x", ok, ErrorKind::SandboxInstanceNotFound).unwrap_err();
        assert_eq!(
            e.to_string(),
            "x: succeeded, expected SandboxInstanceNotFound"
        );
        let wrong = expect_refusal::<()>(
            "x",
            Err(SandboxError::capability_unavailable(Requirement::Mounts)),
            ErrorKind::SandboxInstanceNotFound,
        )
        .unwrap_err();
        assert!(
            wrong
                .to_string()
                .contains("got SandboxCapabilityUnavailable")
        );
        let got = expect_refusal::<()>(
            "x",
            Err(not_found.clone()),
            ErrorKind::SandboxInstanceNotFound,
        );
        assert_eq!(got, Ok(not_found));
        assert!(expect_refused::<()>("x", Ok(())).is_err());
        assert!(ensure(false, || "why".into()).is_err());
        assert!(ensure(true, || unreachable!()).is_ok());
    }
}
