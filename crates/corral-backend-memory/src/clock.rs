//! The injectable clock: creation times, file mtimes, and sandbox expiry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where the memory backend reads "now" from. Sandbox `timeout` and
/// `idle_timeout` are evaluated against it lazily, on every call, so a test
/// can expire a sandbox by moving a [`ManualClock`].
///
/// Command deadlines (`ExecRequest::timeout`) and `sleep` use tokio's timer
/// instead, so `tokio::time::pause()` drives them.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        corral_backend::now_ms()
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(start_ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        // fetch_update never fails with a closure returning Some.
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(ms))
            });
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(Duration::from_millis(250));
        assert_eq!(c.now_ms(), 1_250);
        c.set(5);
        assert_eq!(c.now_ms(), 5);
        c.advance(Duration::MAX);
        assert_eq!(c.now_ms(), u64::MAX);
        assert!(SystemClock.now_ms() > 1_600_000_000_000);
    }
}
