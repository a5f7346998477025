//! The bounds of one capture: the data bytes it may store (the sandbox's
//! disk limit, where it has one: a sandbox cannot hold more, so a file
//! claiming more is being lied about) and a wall-clock deadline.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a capture may take before it is abandoned.
pub const CAPTURE_DEADLINE: Duration = Duration::from_secs(300);

/// Why a capture was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    /// The data to store passed the sandbox's disk limit.
    #[error("its files hold more than the sandbox's disk limit of {limit} bytes")]
    Bytes {
        /// The disk limit, in bytes.
        limit: u64,
    },
    /// The capture ran past its deadline.
    #[error("it took longer than {secs} s")]
    Time {
        /// The deadline, in seconds.
        secs: u64,
    },
}

/// What is left of one capture's bounds.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    left: Cell<u64>,
    deadline: Instant,
    secs: u64,
}

impl Budget {
    /// At most `limit` data bytes within `within`.
    pub fn new(limit: u64, within: Duration) -> Self {
        Budget {
            limit,
            left: Cell::new(limit),
            deadline: Instant::now() + within,
            secs: within.as_secs(),
        }
    }

    /// Takes `bytes` from the budget, or fails when they do not fit.
    pub fn charge(&self, bytes: u64) -> std::io::Result<()> {
        self.in_time()?;
        let left = self.left.get();
        if bytes > left {
            return Err(std::io::Error::other(Exceeded::Bytes { limit: self.limit }));
        }
        self.left.set(left - bytes);
        Ok(())
    }

    /// Fails once the deadline has passed.
    pub fn in_time(&self) -> std::io::Result<()> {
        if Instant::now() > self.deadline {
            return Err(std::io::Error::other(Exceeded::Time { secs: self.secs }));
        }
        Ok(())
    }
}

/// The bound `e` (or an error it wraps, as `tar` does) reports, if any.
pub fn exceeded(e: &std::io::Error) -> Option<Exceeded> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(x) = err.downcast_ref::<Exceeded>() {
            return Some(*x);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(x) = io.get_ref().and_then(|i| i.downcast_ref::<Exceeded>())
        {
            return Some(*x);
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_past_the_limit_is_refused_and_named() {
        let b = Budget::new(10, Duration::from_secs(60));
        b.charge(6).unwrap();
        let e = b.charge(5).unwrap_err();
        assert_eq!(exceeded(&e), Some(Exceeded::Bytes { limit: 10 }));
        let late = Budget::new(10, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            exceeded(&late.in_time().unwrap_err()),
            Some(Exceeded::Time { secs: 0 })
        );
    }
}
