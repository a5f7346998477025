//! The signals that end a front (`corral run`, `corral exec`, `corral mcp`,
//! `corral serve`) cleanly: each is caught, so the front destroys what it
//! created and exits, instead of dying by the signal's default action and
//! leaving a sandbox running. `SIGKILL` cannot be caught: a sandbox created
//! with `bound_to_creator` ends by itself then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

/// The signals caught: interrupt, terminate, hang-up, quit, and the two
/// whose default action also kills (`SIGUSR1`, `SIGALRM`).
pub const CAUGHT: [SignalKind; 6] = [
    SignalKind::interrupt(),
    SignalKind::terminate(),
    SignalKind::hangup(),
    SignalKind::quit(),
    SignalKind::user_defined1(),
    SignalKind::alarm(),
];

/// Whether one of [`CAUGHT`] arrived since [`listen`].
#[derive(Debug, Clone)]
pub struct Ending {
    fired: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl Ending {
    /// Whether a signal already arrived.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
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
}

/// Catches [`CAUGHT`] from now on (the handlers are installed before this
/// returns, so none of them can kill the process any more). A signal whose
/// handler cannot be installed keeps its default action.
pub fn listen() -> Ending {
    let ending = Ending {
        fired: Arc::new(AtomicBool::new(false)),
        notify: Arc::new(Notify::new()),
    };
    for kind in CAUGHT {
        let Ok(mut stream) = signal(kind) else {
            continue;
        };
        let e = ending.clone();
        tokio::spawn(async move {
            if stream.recv().await.is_some() {
                e.fired.store(true, Ordering::SeqCst);
                e.notify.notify_waiters();
            }
        });
    }
    ending
}
