//! `--memory SIZE` and `--disk SIZE`: a byte count, with an optional unit.

/// The units a size may carry, each a power of 1024, longest first so that
/// `kb` is not read as `k` followed by garbage.
const UNITS: [(&str, u32); 13] = [
    ("kib", 10),
    ("mib", 20),
    ("gib", 30),
    ("tib", 40),
    ("kb", 10),
    ("mb", 20),
    ("gb", 30),
    ("tb", 40),
    ("k", 10),
    ("m", 20),
    ("g", 30),
    ("t", 40),
    ("b", 0),
];

/// Parses a size: digits, then optionally a unit (`k`, `m`, `g`, `t`, with
/// or without `b`/`ib`, any case; each a power of 1024): `512m`, `1g`,
/// `1048576`. Refuses zero, a fraction, an unknown unit and an overflow,
/// naming the value (clap adds the flag).
pub fn parse(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, shift) = UNITS
        .iter()
        .find_map(|(unit, shift)| lower.strip_suffix(unit).map(|d| (d, *shift)))
        .unwrap_or((lower.as_str(), 0));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{text:?} is not a size (bytes, or a number with k, m, g or t: 512m, 1g)"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is too large"))?;
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))?;
    if bytes == 0 {
        return Err(format!("{text:?}: a size must be more than 0 bytes"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn sizes_parse_in_powers_of_1024_and_bad_ones_are_refused() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("512m", 512 << 20),
            ("512M", 512 << 20),
            ("1g", 1 << 30),
            ("1GiB", 1 << 30),
            ("2gb", 2 << 30),
            ("64k", 64 << 10),
            ("100b", 100),
            ("1t", 1 << 40),
        ] {
            assert_eq!(parse(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "0",
            "0m",
            "m",
            "1.5g",
            "-1",
            "1x",
            "1 g",
            "g1",
            "99999999999999999999",
            "20000000t",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
