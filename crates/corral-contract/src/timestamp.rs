//! Canonical UTC timestamps: exactly `YYYY-MM-DDTHH:MM:SS.mmmZ`.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::InvalidValue;
use crate::bounds::TIMESTAMP_PATTERN;

/// A canonical UTC instant with millisecond precision.
///
/// The contract asks for "canonical UTC ISO-8601 that round-trips
/// byte-identically". corral's canonical form is exactly the one JavaScript's
/// `Date.prototype.toISOString` prints for years 0000–9999:
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` — four-digit year, two-digit month, day, hour,
/// minute, second, exactly three fraction digits, a literal `Z`. Every other
/// spelling (an offset, missing or extra fraction digits, lowercase `t`/`z`, a
/// space separator, leap second `:60`, a day that does not exist such as
/// February 30) is refused, so parse → format always reproduces the input
/// bytes.
///
/// Internally the instant is milliseconds since the Unix epoch, computed by
/// hand with days-from-civil arithmetic on the proleptic Gregorian calendar.
/// `Ord` is chronological order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    epoch_millis: i64,
}

const MILLIS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian civil date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 }; // March = 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        _ => 28,
    }
}

impl Timestamp {
    /// The earliest representable instant, `0000-01-01T00:00:00.000Z`.
    pub const MIN: Timestamp = Timestamp {
        epoch_millis: -62_167_219_200_000,
    };

    /// The latest representable instant, `9999-12-31T23:59:59.999Z`.
    pub const MAX: Timestamp = Timestamp {
        epoch_millis: 253_402_300_799_999,
    };

    /// The Unix epoch, `1970-01-01T00:00:00.000Z`.
    pub const UNIX_EPOCH: Timestamp = Timestamp { epoch_millis: 0 };

    /// Parses the canonical form, refusing every other spelling.
    pub fn parse(text: &str) -> Result<Self, InvalidValue> {
        let refuse = |rule: &str| {
            Err(InvalidValue::string(
                "timestamp",
                text,
                format!("{rule} (canonical form YYYY-MM-DDTHH:MM:SS.mmmZ, {TIMESTAMP_PATTERN})"),
            ))
        };
        let b = text.as_bytes();
        if b.len() != 24 {
            return refuse("is not 24 bytes long");
        }
        let separators = [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ];
        for (at, want) in separators {
            if b[at] != want {
                return refuse("does not match");
            }
        }
        let number = |from: usize, to: usize| -> Option<u32> {
            b[from..to].iter().try_fold(0u32, |acc, &c| {
                c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
            })
        };
        let fields = (
            number(0, 4),
            number(5, 7),
            number(8, 10),
            number(11, 13),
            number(14, 16),
            number(17, 19),
            number(20, 23),
        );
        let (
            Some(year),
            Some(month),
            Some(day),
            Some(hour),
            Some(minute),
            Some(second),
            Some(milli),
        ) = fields
        else {
            return refuse("does not match");
        };
        let year = i64::from(year);
        if !(1..=12).contains(&month) {
            return refuse("has a month outside 01..=12");
        }
        if day < 1 || day > days_in_month(year, month) {
            return refuse("names a day that does not exist in its month");
        }
        if hour > 23 || minute > 59 || second > 59 {
            return refuse("has a time of day outside 00:00:00..=23:59:59");
        }
        let millis = days_from_civil(year, month, day) * MILLIS_PER_DAY
            + i64::from(hour) * 3_600_000
            + i64::from(minute) * 60_000
            + i64::from(second) * 1000
            + i64::from(milli);
        Ok(Self {
            epoch_millis: millis,
        })
    }

    /// The instant `millis` milliseconds after the Unix epoch (negative:
    /// before), refused outside [`Timestamp::MIN`]..=[`Timestamp::MAX`].
    pub fn from_epoch_millis(millis: i64) -> Result<Self, InvalidValue> {
        if (Self::MIN.epoch_millis..=Self::MAX.epoch_millis).contains(&millis) {
            Ok(Self {
                epoch_millis: millis,
            })
        } else {
            Err(InvalidValue::value(
                "timestamp",
                millis,
                "epoch milliseconds fall outside years 0000..=9999",
            ))
        }
    }

    /// Milliseconds since the Unix epoch (negative: before it).
    pub const fn epoch_millis(self) -> i64 {
        self.epoch_millis
    }

    /// This instant plus `millis` (which may be negative), or `None` outside
    /// the representable range.
    pub fn checked_add_millis(self, millis: i64) -> Option<Self> {
        let sum = self.epoch_millis.checked_add(millis)?;
        Self::from_epoch_millis(sum).ok()
    }

    /// This instant plus `seconds`, or `None` outside the representable range.
    pub fn checked_add_seconds(self, seconds: u64) -> Option<Self> {
        let millis = i64::try_from(seconds).ok()?.checked_mul(1000)?;
        self.checked_add_millis(millis)
    }

    /// Milliseconds from `earlier` to `self` (negative when `earlier` is later).
    pub const fn millis_since(self, earlier: Timestamp) -> i64 {
        self.epoch_millis - earlier.epoch_millis
    }

    /// Converts a [`SystemTime`], truncating to whole milliseconds (toward the
    /// past). Pure arithmetic; reading the clock is the caller's business.
    pub fn from_system_time(time: SystemTime) -> Result<Self, InvalidValue> {
        let millis = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => {
                let d = before.duration();
                let whole = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
                // Truncate toward the past: a partial millisecond counts as one more.
                if d.subsec_nanos() % 1_000_000 == 0 {
                    -whole
                } else {
                    -whole - 1
                }
            }
        };
        Self::from_epoch_millis(millis)
    }

    /// The same instant as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        let magnitude = Duration::from_millis(self.epoch_millis.unsigned_abs());
        if self.epoch_millis >= 0 {
            UNIX_EPOCH + magnitude
        } else {
            UNIX_EPOCH - magnitude
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.epoch_millis.div_euclid(MILLIS_PER_DAY);
        let in_day = self.epoch_millis.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            in_day / 3_600_000,
            in_day / 60_000 % 60,
            in_day / 1000 % 60,
            in_day % 1000
        )
    }
}

impl std::str::FromStr for Timestamp {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<&str> for Timestamp {
    type Error = InvalidValue;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::parse(value)
    }
}

impl TryFrom<String> for Timestamp {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<Timestamp> for String {
    fn from(value: Timestamp) -> String {
        value.to_string()
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        Self::parse(&text).map_err(<D::Error as serde::de::Error>::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": TIMESTAMP_PATTERN,
            "description": "Canonical UTC instant, exactly YYYY-MM-DDTHH:MM:SS.mmmZ (years 0000-9999), as JavaScript's Date.prototype.toISOString prints it.",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_over_the_whole_range() {
        // Every day from 0000-01-01 to 9999-12-31 maps back to itself.
        let first = days_from_civil(0, 1, 1);
        let last = days_from_civil(9999, 12, 31);
        let mut expected = (0i64, 1u32, 1u32);
        for d in first..=last {
            let got = civil_from_days(d);
            assert_eq!(got, expected, "day {d}");
            assert_eq!(days_from_civil(got.0, got.1, got.2), d);
            let (y, m, day) = expected;
            expected = if day < days_in_month(y, m) {
                (y, m, day + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }

    #[test]
    fn bounds_are_the_first_and_last_millisecond() {
        assert_eq!(Timestamp::MIN.to_string(), "0000-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::MAX.to_string(), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            Timestamp::UNIX_EPOCH.to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::parse("0000-01-01T00:00:00.000Z").unwrap(),
            Timestamp::MIN
        );
        assert_eq!(
            Timestamp::parse("9999-12-31T23:59:59.999Z").unwrap(),
            Timestamp::MAX
        );
        assert!(Timestamp::from_epoch_millis(Timestamp::MAX.epoch_millis() + 1).is_err());
        assert!(Timestamp::from_epoch_millis(Timestamp::MIN.epoch_millis() - 1).is_err());
    }

    #[test]
    fn known_instants() {
        // Values as JavaScript's Date prints them.
        let t = Timestamp::parse("2026-11-29T19:27:50.123Z").unwrap();
        assert_eq!(t.epoch_millis(), 1_795_980_470_123);
        let pre = Timestamp::from_epoch_millis(-1).unwrap();
        assert_eq!(pre.to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            Timestamp::parse("2000-02-29T00:00:00.000Z")
                .unwrap()
                .epoch_millis(),
            951_782_400_000
        );
    }

    #[test]
    fn system_time_conversion_truncates_toward_the_past() {
        let t = UNIX_EPOCH - Duration::from_micros(1500);
        assert_eq!(Timestamp::from_system_time(t).unwrap().epoch_millis(), -2);
        let t = UNIX_EPOCH + Duration::from_micros(1500);
        assert_eq!(Timestamp::from_system_time(t).unwrap().epoch_millis(), 1);
        let ts = Timestamp::from_epoch_millis(-5).unwrap();
        assert_eq!(
            Timestamp::from_system_time(ts.to_system_time()).unwrap(),
            ts
        );
    }
}
