//! Signal names, as results and control requests carry them.
//!
//! The table is the contract's [`SignalName`] (the standard signals 1–31):
//! one vocabulary for every backend, so a signal the contract names is
//! never reported as a bare number.

use corral_contract::SignalName;

/// The conventional name of Linux signal `n` (`SIG<n>` where it has none).
pub fn name_of(n: i32) -> String {
    SignalName::from_number(n)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|| format!("SIG{n}"))
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

/// The control signals a caller may send to a live process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ControlSignal {
    /// Interrupt.
    #[serde(rename = "SIGINT")]
    Interrupt,
    /// Polite termination.
    #[serde(rename = "SIGTERM")]
    Terminate,
    /// Forced kill.
    #[serde(rename = "SIGKILL")]
    Kill,
}

impl ControlSignal {
    /// The Linux signal number.
    pub fn number(self) -> i32 {
        match self {
            ControlSignal::Interrupt => 2,
            ControlSignal::Terminate => 15,
            ControlSignal::Kill => 9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(name_of(9), "SIGKILL");
        assert_eq!(number_of("SIGKILL"), Some(9));
        assert_eq!(number_of("TERM"), Some(15));
        assert_eq!(name_of(64), "SIG64");
    }

    #[test]
    fn every_standard_signal_has_its_name() {
        assert_eq!(name_of(27), "SIGPROF");
        assert_eq!(number_of("SIGPROF"), Some(27));
        for n in 1..=31 {
            let name = name_of(n);
            assert!(!name.starts_with("SIG") || name != format!("SIG{n}"), "{n}");
            assert_eq!(number_of(&name), Some(n), "{name}");
        }
    }
}
