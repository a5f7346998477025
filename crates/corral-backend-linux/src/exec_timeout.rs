//! The default wall-clock limit of an exec whose request sets no `timeout`:
//! [`DEFAULT_EXEC_TIMEOUT`], or what [`DEFAULT_TIMEOUT_ENV`] says. The
//! backend reads it when it opens and `exec` names the variable when the
//! limit ends a command, so both take it from here.

use std::time::Duration;

use corral_backend::{BackendError, RequestError, Result};

/// The wall-clock limit of an exec whose request sets no `timeout`:
/// 30 minutes. Change it with [`crate::LinuxBackend::with_default_exec_timeout`]
/// or the [`DEFAULT_TIMEOUT_ENV`] variable (read by [`crate::LinuxBackend::open`]);
/// a request's own `timeout` always wins.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The environment variable [`crate::LinuxBackend::open`] reads the default exec
/// wall-clock limit from: a positive number with an optional unit `ms`,
/// `s` (the default), `m` or `h` (`90`, `500ms`, `45m`, `2h`).
pub const DEFAULT_TIMEOUT_ENV: &str = "CORRAL_LINUX_DEFAULT_TIMEOUT";

/// Parses a default exec timeout as [`DEFAULT_TIMEOUT_ENV`] holds it.
pub fn parse_default_timeout(text: &str) -> Result<Duration> {
    let bad = |why: &str| -> BackendError {
        RequestError::Setting {
            name: DEFAULT_TIMEOUT_ENV.into(),
            value: text.into(),
            why: format!(
                "{why} (expected a positive number with an optional unit ms, s, m or h, like 90s \
                 or 30m)"
            ),
        }
        .into()
    };
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad("not a number"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad("unknown unit")),
    };
    if d.is_zero() {
        return Err(bad("zero would time out every command"));
    }
    Ok(d)
}

/// The default exec timeout of this process: [`DEFAULT_TIMEOUT_ENV`] when
/// it is set (a malformed value is refused with `invalid_input`), else
/// [`DEFAULT_EXEC_TIMEOUT`].
pub fn from_env() -> Result<Duration> {
    match std::env::var(DEFAULT_TIMEOUT_ENV) {
        Ok(text) if !text.trim().is_empty() => parse_default_timeout(&text),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(DEFAULT_EXEC_TIMEOUT),
        Err(std::env::VarError::NotUnicode(value)) => Err(RequestError::Setting {
            name: DEFAULT_TIMEOUT_ENV.into(),
            value: value.to_string_lossy().into_owned(),
            why: "not valid UTF-8".into(),
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::ErrorCode;

    #[test]
    fn default_timeouts_parse_with_units_and_refuse_nonsense() {
        assert_eq!(
            parse_default_timeout("90").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_default_timeout("90s").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_default_timeout("500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_default_timeout(" 45m ").unwrap(),
            Duration::from_secs(2700)
        );
        assert_eq!(
            parse_default_timeout("2h").unwrap(),
            Duration::from_secs(7200)
        );
        for bad in ["", "0", "0s", "-5", "5d", "1.5s", "m", "ten"] {
            let err = parse_default_timeout(bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidInput, "{bad:?}");
            assert!(err.message().contains(DEFAULT_TIMEOUT_ENV), "{err}");
        }
    }
}
