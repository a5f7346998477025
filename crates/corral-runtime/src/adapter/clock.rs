//! Instants: the adapter's own clock, and the backend's epoch milliseconds as
//! contract timestamps.
//!
//! Facts the backend records (a sandbox's or snapshot's creation, a
//! command's start and end) keep the backend's clock; the adapter reads the
//! wall clock only for what it decides itself (a snapshot's retention check,
//! a process's start, the interval of a command that timed out).

use std::time::SystemTime;

use corral_contract::{FailureReason, Operation, SandboxError, Timestamp};

use super::errors::failed;

/// The wall clock as a contract timestamp.
pub(crate) fn now(operation: Operation) -> Result<Timestamp, SandboxError> {
    Timestamp::from_system_time(SystemTime::now())
        .map_err(|_| failed(operation, FailureReason::PlatformUnavailable))
}

/// A backend's epoch milliseconds as a contract timestamp; an instant outside
/// years 0000–9999 is a backend defect.
pub(crate) fn from_ms(operation: Operation, ms: u64) -> Result<Timestamp, SandboxError> {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| Timestamp::from_epoch_millis(ms).ok())
        .ok_or_else(|| failed(operation, FailureReason::PlatformRejected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_milliseconds_become_timestamps() {
        let t = from_ms(Operation::Snapshot, 1_600_000_000_123).unwrap();
        assert_eq!(t.to_string(), "2020-09-13T12:26:40.123Z");
        assert_eq!(
            from_ms(Operation::Snapshot, u64::MAX).unwrap_err(),
            failed(Operation::Snapshot, FailureReason::PlatformRejected)
        );
        assert!(now(Operation::Execute).unwrap() > t);
    }
}
