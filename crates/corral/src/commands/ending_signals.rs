//! The signals that end a front (`corral run`, `corral exec`, `corral
//! shell`, `corral mcp`, `corral serve`) cleanly: each is caught, so the
//! front destroys what it created and exits, instead of dying by the
//! signal's default action and leaving a sandbox running. `SIGKILL` cannot
//! be caught: a sandbox created with `bound_to_creator` ends by itself then.
//!
//! `run` and `exec` then exit as a shell reports a process the signal
//! killed: 128 + the signal's number (`SIGINT` 130, `SIGTERM` 143,
//! `SIGHUP` 129, `SIGQUIT` 131, `SIGUSR1` 138, `SIGALRM` 142), with one
//! line naming the signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use corral_contract::SignalName;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

/// The signals caught, by the contract's names: interrupt, terminate,
/// hang-up, quit, and the two whose default action also kills (`SIGUSR1`,
/// `SIGALRM`).
pub const CAUGHT: [SignalName; 6] = [
    SignalName::Sigint,
    SignalName::Sigterm,
    SignalName::Sighup,
    SignalName::Sigquit,
    SignalName::Sigusr1,
    SignalName::Sigalrm,
];

/// One of [`CAUGHT`] that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndingSignal {
    /// Its number.
    pub number: i32,
    /// Its name, `SIGTERM`.
    pub name: &'static str,
}

impl EndingSignal {
    /// The signal numbered `number`, if it is one of [`CAUGHT`].
    pub fn from_number(number: i32) -> Option<Self> {
        CAUGHT
            .into_iter()
            .find(|s| s.number() == number)
            .map(|s| EndingSignal {
                number,
                name: s.as_str(),
            })
    }

    /// The exit status after it: 128 + its number, as a shell reports a
    /// process the signal killed.
    pub fn exit_status(self) -> i32 {
        128 + self.number
    }
}

/// Which of [`CAUGHT`] arrived first since [`listen`], if one did.
#[derive(Debug, Clone)]
pub struct Ending {
    /// The first signal's number; 0 while none arrived.
    first: Arc<AtomicI32>,
    notify: Arc<Notify>,
}

impl Ending {
    /// Whether a signal already arrived.
    pub fn fired(&self) -> bool {
        self.signal().is_some()
    }

    /// The first signal that arrived, if one did.
    pub fn signal(&self) -> Option<EndingSignal> {
        EndingSignal::from_number(self.first.load(Ordering::SeqCst))
    }

    /// Resolves once a signal arrived (at once when one already did).
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.fired() {
                return;
            }
            notified.await;
        }
    }

    /// Records that `number` arrived, unless another signal came first.
    fn arrived(&self, number: i32) {
        let _ = self
            .first
            .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// Catches [`CAUGHT`] from now on (the handlers are installed before this
/// returns, so none of them can kill the process any more). A signal whose
/// handler cannot be installed keeps its default action.
pub fn listen() -> Ending {
    let ending = Ending {
        first: Arc::new(AtomicI32::new(0)),
        notify: Arc::new(Notify::new()),
    };
    for name in CAUGHT {
        let number = name.number();
        let Ok(mut stream) = signal(SignalKind::from_raw(number)) else {
            continue;
        };
        let e = ending.clone();
        tokio::spawn(async move {
            if stream.recv().await.is_some() {
                e.arrived(number);
            }
        });
    }
    ending
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caught_signal_exits_128_plus_its_number() {
        for (name, status) in [
            ("SIGHUP", 129),
            ("SIGINT", 130),
            ("SIGQUIT", 131),
            ("SIGUSR1", 138),
            ("SIGALRM", 142),
            ("SIGTERM", 143),
        ] {
            let signal = EndingSignal::from_number(status - 128).expect(name);
            assert_eq!((signal.name, signal.exit_status()), (name, status));
        }
        assert_eq!(EndingSignal::from_number(0), None, "no signal");
        assert_eq!(EndingSignal::from_number(9), None, "SIGKILL is not caught");
    }
}
