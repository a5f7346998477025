//! Signals, as results and control requests carry them: the contract's
//! vocabularies, one for every backend, so a signal the contract names is
//! never reported as a bare number and no backend keeps a table of its own.

pub use corral_contract::{ControlSignal, SignalName};

use crate::exec::ExitStatus;

/// The status of a process that Linux signal `n` ended: named when the
/// contract names it (the standard signals 1–31), by number otherwise (the
/// real-time signals).
pub fn exit_status(n: i32) -> ExitStatus {
    match SignalName::from_number(n) {
        Some(name) => ExitStatus::Signal(name),
        None => ExitStatus::UnnamedSignal(n),
    }
}

/// The number of a signal name (`SIGTERM` or `TERM`).
pub fn number_of(name: &str) -> Option<i32> {
    let full = if name.starts_with("SIG") {
        name.to_string()
    } else {
        format!("SIG{name}")
    };
    SignalName::parse(&full).ok().map(SignalName::number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_standard_signal_is_named_and_the_rest_are_numbered() {
        let table: &[(i32, ExitStatus)] = &[
            (9, ExitStatus::Signal(SignalName::Sigkill)),
            (15, ExitStatus::Signal(SignalName::Sigterm)),
            (27, ExitStatus::Signal(SignalName::Sigprof)),
            (31, ExitStatus::Signal(SignalName::Sigsys)),
            (34, ExitStatus::UnnamedSignal(34)),
            (64, ExitStatus::UnnamedSignal(64)),
        ];
        for (n, status) in table {
            assert_eq!(exit_status(*n), *status, "{n}");
        }
        for n in 1..=31 {
            let ExitStatus::Signal(name) = exit_status(n) else {
                panic!("signal {n} has no name");
            };
            assert_eq!(number_of(name.as_str()), Some(n), "{name}");
        }
    }

    #[test]
    fn names_parse_with_or_without_the_prefix() {
        assert_eq!(number_of("SIGKILL"), Some(9));
        assert_eq!(number_of("TERM"), Some(15));
        assert_eq!(number_of("SIG64"), None);
        assert_eq!(number_of("NOPE"), None);
    }

    /// The contract: "`SIGINT`, `SIGTERM`, and `SIGKILL` are the
    /// vocabulary" of a live process's control signal.
    #[test]
    fn control_signals_are_the_contract_s_with_their_numbers() {
        assert_eq!(ControlSignal::Sigint.number(), 2);
        assert_eq!(ControlSignal::Sigterm.number(), 15);
        assert_eq!(ControlSignal::Sigkill.number(), 9);
    }
}
