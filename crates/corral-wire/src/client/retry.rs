//! The retry rule: when a call that failed on the way is sent again.
//!
//! A call is sent at most twice, and the second attempt always goes on a
//! fresh connection. It is sent again only when
//!
//! - the first attempt's request provably never reached the server:
//!   connecting failed ([`Failure::Connect`]), or the connection (a pooled
//!   one the server had closed, in practice) ended before the request's
//!   first byte was written — hyper hands such a request back, and only
//!   such a request ([`Failure::Unsent`]); or
//! - its request may have reached the server ([`Failure::MaybeSent`]) but
//!   the operation is idempotent: sending it twice settles as sending it
//!   once ([`crate::protocol::Route::idempotent`],
//!   [`crate::protocol::backend::BackendRoute::idempotent`]).
//!
//! A call that may have reached the server and is not idempotent
//! (`provision`, `execute`, `writeFile`, a commit, …) is never repeated: the
//! caller gets the unavailable error and decides, exactly as when the
//! server went away mid-call. An answer, whatever its status, is never a
//! failure here: it is returned as it came.

/// How far a failed attempt got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No connection: connecting to the server failed. Nothing was sent.
    Connect,
    /// The connection ended before any of the request was written, and
    /// hyper handed the request back. Nothing was sent.
    Unsent,
    /// The connection broke after the request may have been written
    /// (before the response's head, or during its body): the server may
    /// have acted on it.
    MaybeSent,
}

/// Whether a failed attempt is followed by another (on a fresh
/// connection): `attempt` counts from 0, and only the first is ever
/// followed. See the module's documentation.
pub(crate) fn retry(attempt: u32, failure: Failure, idempotent: bool) -> bool {
    attempt == 0
        && match failure {
            Failure::Connect | Failure::Unsent => true,
            Failure::MaybeSent => idempotent,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (attempt, failure, idempotent) and what the rule decides.
    #[test]
    fn the_retry_table() {
        use Failure::*;
        #[rustfmt::skip]
        let table = [
            // attempt, failure,   idempotent, sent again
            (0,         Connect,   false,      true),
            (0,         Connect,   true,       true),
            (0,         Unsent,    false,      true),
            (0,         Unsent,    true,       true),
            (0,         MaybeSent, false,      false),
            (0,         MaybeSent, true,       true),
            (1,         Connect,   false,      false),
            (1,         Connect,   true,       false),
            (1,         Unsent,    false,      false),
            (1,         Unsent,    true,       false),
            (1,         MaybeSent, false,      false),
            (1,         MaybeSent, true,       false),
        ];
        for (attempt, failure, idempotent, expected) in table {
            assert_eq!(
                retry(attempt, failure, idempotent),
                expected,
                "attempt {attempt}, {failure:?}, idempotent {idempotent}"
            );
        }
    }
}
