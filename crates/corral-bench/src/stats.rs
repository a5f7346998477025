//! Order statistics of timing samples: median and percentiles.

use serde::{Deserialize, Serialize};

/// The median and the 10th and 90th percentiles of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The 50th percentile.
    pub median: f64,
    /// The 10th percentile.
    pub p10: f64,
    /// The 90th percentile.
    pub p90: f64,
}

impl Summary {
    /// Summarizes `samples` (any order); `None` when there are none or any is
    /// not a finite number.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let sorted = sorted(samples)?;
        Some(Summary {
            median: percentile_sorted(&sorted, 50.0)?,
            p10: percentile_sorted(&sorted, 10.0)?,
            p90: percentile_sorted(&sorted, 90.0)?,
        })
    }
}

/// The `p`-th percentile (0–100) of `samples` (any order), interpolated
/// linearly between the two nearest ranks (rank `p/100 · (n − 1)`, the
/// definition numpy and R use by default). `None` for no samples, a
/// non-finite sample or `p` outside 0–100.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    percentile_sorted(&sorted(samples)?, p)
}

/// The median of `samples` (any order): the middle one, or the mean of the
/// two middle ones.
pub fn median(samples: &[f64]) -> Option<f64> {
    percentile(samples, 50.0)
}

fn sorted(samples: &[f64]) -> Option<Vec<f64>> {
    if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Some(v)
}

fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let (a, b) = (*sorted.get(lo)?, *sorted.get(hi)?);
    Some(a + (b - a) * (rank - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let data: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Summary::of(&data).unwrap();
        assert!(close(s.median, 5.5), "{s:?}");
        assert!(close(s.p10, 1.9), "{s:?}");
        assert!(close(s.p90, 9.1), "{s:?}");
        assert_eq!(percentile(&data, 0.0), Some(1.0));
        assert_eq!(percentile(&data, 100.0), Some(10.0));
    }

    #[test]
    fn percentiles_of_eleven_samples_hit_ranks_exactly() {
        let data: Vec<f64> = (0..=10).map(|i| f64::from(i) * 10.0).collect();
        let s = Summary::of(&data).unwrap();
        assert_eq!((s.p10, s.median, s.p90), (10.0, 50.0, 90.0));
    }

    #[test]
    fn a_single_sample_is_every_percentile() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!((s.p10, s.median, s.p90), (42.0, 42.0, 42.0));
    }

    #[test]
    fn outliers_do_not_move_the_median() {
        let s = Summary::of(&[10.0, 11.0, 12.0, 13.0, 10_000.0]).unwrap();
        assert_eq!(s.median, 12.0);
        assert!(s.p90 > 13.0);
    }

    #[test]
    fn no_samples_nan_or_bad_percentile_give_none() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        assert_eq!(percentile(&[1.0, 2.0], 101.0), None);
        assert_eq!(percentile(&[1.0, 2.0], -1.0), None);
    }
}
