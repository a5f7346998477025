//! Epoch milliseconds as RFC 3339 timestamps (UTC), as E2B's JSON carries
//! `startedAt`, `endAt` and `modifiedTime`.

use corral_contract::Timestamp;

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`: the contract's
/// canonical [`Timestamp`] form, which is RFC 3339 in UTC. An instant past
/// the year 9999 shows as the latest one there is.
pub fn rfc3339(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    Timestamp::from_epoch_millis(ms)
        .unwrap_or(Timestamp::MAX)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
        ] {
            assert_eq!(rfc3339(ms), text, "{ms}");
        }
    }
}
