//! Signal names, as results and control requests carry them.

const NAMES: &[(&str, i32)] = &[
    ("SIGHUP", 1),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGILL", 4),
    ("SIGTRAP", 5),
    ("SIGABRT", 6),
    ("SIGBUS", 7),
    ("SIGFPE", 8),
    ("SIGKILL", 9),
    ("SIGUSR1", 10),
    ("SIGSEGV", 11),
    ("SIGUSR2", 12),
    ("SIGPIPE", 13),
    ("SIGALRM", 14),
    ("SIGTERM", 15),
    ("SIGCHLD", 17),
    ("SIGCONT", 18),
    ("SIGSTOP", 19),
    ("SIGTSTP", 20),
    ("SIGXCPU", 24),
    ("SIGXFSZ", 25),
    ("SIGSYS", 31),
];

/// The conventional name of Linux signal `n` (`SIG<n>` where it has none).
pub fn name_of(n: i32) -> String {
    NAMES
        .iter()
        .find(|(_, v)| *v == n)
        .map(|(s, _)| (*s).to_string())
        .unwrap_or_else(|| format!("SIG{n}"))
}

/// The number of a signal name (`SIGTERM` or `TERM`).
pub fn number_of(name: &str) -> Option<i32> {
    let full = if name.starts_with("SIG") {
        name.to_string()
    } else {
        format!("SIG{name}")
    };
    NAMES.iter().find(|(s, _)| *s == full).map(|(_, v)| *v)
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
}
