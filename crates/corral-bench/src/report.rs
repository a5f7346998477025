//! The report: host facts and rows, as a table for people and as JSON.

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::host::Host;
use crate::measure::Metric;
use crate::runner::{Outcome, Row};

/// Everything one bench run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The machine it ran on.
    pub host: Host,
    /// Iterations asked for (`None`: each measure's default).
    pub iterations_requested: Option<u32>,
    /// The `only` filters given.
    pub only: Vec<String>,
    /// One row per measure, in run order.
    pub rows: Vec<Row>,
}

impl Report {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String, BenchError> {
        serde_json::to_string_pretty(self).map_err(|e| BenchError::Json(e.to_string()))
    }

    /// The human-readable table: a host line, a header, one line per row.
    pub fn table(&self) -> String {
        let h = &self.host;
        let memory = h.memory_bytes.map_or("? GiB".into(), |b| {
            format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
        });
        let mut out = format!(
            "corral {} bench, {}: kernel {}, {} cores, {memory}{}\n",
            h.corral_version,
            h.date,
            h.kernel,
            h.cores,
            if h.root { ", root" } else { "" }
        );
        let name_w = self
            .rows
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        out.push_str(&format!(
            "{:<name_w$}  {:<9}  {:>10}  {:>10}  {:>10}  {:>8}  {:>5}  note\n",
            "name", "group", "median", "p10", "p90", "x floor", "iters"
        ));
        for r in &self.rows {
            let ratio = r.ratio_to_floor.map_or("-".into(), |x| format!("{x:.2}x"));
            let mut note = match r.outcome {
                Outcome::Measured => String::new(),
                Outcome::Skipped => "skipped: ".into(),
                Outcome::Failed => "FAILED: ".into(),
            };
            if let Some(m) = r.metric {
                note.push_str(&metric_text(m));
                if r.note.is_some() {
                    note.push_str("; ");
                }
            }
            note.push_str(r.note.as_deref().unwrap_or(""));
            out.push_str(&format!(
                "{:<name_w$}  {:<9}  {:>10}  {:>10}  {:>10}  {:>8}  {:>5}  {}\n",
                r.name,
                r.group.as_str(),
                time_text(r.median_us),
                time_text(r.p10_us),
                time_text(r.p90_us),
                ratio,
                r.iterations,
                note
            ));
        }
        out
    }
}

/// A metric as shown in the table.
fn metric_text(m: Metric) -> String {
    match m {
        Metric::ThroughputMibPerS(v) => format!("{v:.0} MiB/s"),
        Metric::RssBytesPerSandbox(v) => format!("{v:+.0} B RSS/sandbox"),
        Metric::HostBytesPerSandbox(v) => format!("{v:+.0} B host/sandbox"),
        Metric::Density(d) => format!(
            "{:+.0} B host/sandbox, create ×{:.2} last/first tenth",
            d.host_bytes_per_sandbox,
            d.last_tenth_create_us / d.first_tenth_create_us.max(f64::MIN_POSITIVE)
        ),
        Metric::Concurrency(c) => format!(
            "exec p50 {} p95 {}, {:.0}/s",
            time_text(Some(c.median_us)),
            time_text(Some(c.p95_us)),
            c.execs_per_s
        ),
    }
}

/// Microseconds in the unit that keeps them short.
pub fn time_text(us: Option<f64>) -> String {
    match us {
        None => "-".into(),
        Some(us) if us < 1_000.0 => format!("{us:.1} µs"),
        Some(us) if us < 1_000_000.0 => format!("{:.2} ms", us / 1e3),
        Some(us) => format!("{:.2} s", us / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_pick_their_unit() {
        assert_eq!(time_text(None), "-");
        assert_eq!(time_text(Some(12.34)), "12.3 µs");
        assert_eq!(time_text(Some(1_234.0)), "1.23 ms");
        assert_eq!(time_text(Some(2_500_000.0)), "2.50 s");
    }
}
