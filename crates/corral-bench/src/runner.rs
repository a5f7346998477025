//! Runs measures one after another and turns their samples into [`Row`]s.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::measure::{Group, Measure, Metric, Role, Setup};
use crate::stats::Summary;

/// How one row ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every iteration succeeded; the times are its statistics.
    Measured,
    /// Not run here; the note says why.
    Skipped,
    /// Setup, an iteration or the teardown failed; the note says which and how.
    Failed,
}

/// One line of the report. Times are microseconds per iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What was measured.
    pub name: String,
    /// The group it is compared within.
    pub group: Group,
    /// Whether it is its group's floor.
    pub role: Role,
    /// Measured, skipped or failed.
    pub outcome: Outcome,
    /// The median time, µs.
    pub median_us: Option<f64>,
    /// The 10th percentile time, µs.
    pub p10_us: Option<f64>,
    /// The 90th percentile time, µs.
    pub p90_us: Option<f64>,
    /// The median divided by the group floor's median.
    pub ratio_to_floor: Option<f64>,
    /// Timed iterations (warm-ups excluded).
    pub iterations: u32,
    /// A figure besides the times (throughput, bytes per sandbox).
    pub metric: Option<Metric>,
    /// What ran, or why it did not.
    pub note: Option<String>,
}

/// How to run a set of measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Timed iterations of every measure that allows a choice (`None`: each
    /// measure's default).
    pub iterations: Option<u32>,
    /// One iteration running longer than this fails the row (effective for
    /// measures whose iterations yield to the runtime).
    pub iteration_limit: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            iterations: None,
            iteration_limit: Duration::from_secs(60),
        }
    }
}

/// Keeps the measures whose name starts with one of `only`, or whose group
/// is one of them (case-insensitive), plus the floor of every kept group so
/// that ratios exist; empty `only` keeps all. Fails naming the first filter
/// that matches nothing.
pub fn select(
    measures: Vec<Box<dyn Measure>>,
    only: &[String],
) -> Result<Vec<Box<dyn Measure>>, BenchError> {
    if only.is_empty() {
        return Ok(measures);
    }
    let wanted: Vec<String> = only.iter().map(|f| f.trim().to_lowercase()).collect();
    let matches = |m: &dyn Measure, f: &str| {
        !f.is_empty() && (m.group().as_str() == f || m.name().to_lowercase().starts_with(f))
    };
    for (f, given) in wanted.iter().zip(only) {
        if !measures.iter().any(|m| matches(&**m, f)) {
            let mut known: Vec<String> = measures.iter().map(|m| m.name().to_owned()).collect();
            known.extend(Group::ALL.iter().map(|g| g.as_str().to_owned()));
            return Err(BenchError::UnknownFilter {
                filter: given.clone(),
                known: known.join(", "),
            });
        }
    }
    let picked: Vec<bool> = measures
        .iter()
        .map(|m| wanted.iter().any(|f| matches(&**m, f)))
        .collect();
    let groups: Vec<Group> = measures
        .iter()
        .zip(&picked)
        .filter(|(_, p)| **p)
        .map(|(m, _)| m.group())
        .collect();
    Ok(measures
        .into_iter()
        .zip(picked)
        .filter(|(m, p)| *p || (m.role() == Role::Floor && groups.contains(&m.group())))
        .map(|(m, _)| m)
        .collect())
}

/// Runs every measure in order, then fills in the ratios to each group's floor.
pub async fn run_measures(measures: Vec<Box<dyn Measure>>, options: &RunOptions) -> Vec<Row> {
    let mut rows = Vec::with_capacity(measures.len());
    for mut m in measures {
        rows.push(run_one(&mut *m, options).await);
    }
    fill_ratios(&mut rows);
    rows
}

/// Sets `ratio_to_floor` of every measured row whose group has a measured floor.
pub fn fill_ratios(rows: &mut [Row]) {
    let floors: Vec<(Group, f64)> = rows
        .iter()
        .filter(|r| r.role == Role::Floor && r.outcome == Outcome::Measured)
        .filter_map(|r| Some((r.group, r.median_us?)))
        .collect();
    for row in rows.iter_mut() {
        let floor = floors
            .iter()
            .find(|(g, _)| *g == row.group)
            .map(|(_, f)| *f);
        row.ratio_to_floor = match (row.median_us, floor) {
            (Some(m), Some(f)) if f > 0.0 && row.outcome == Outcome::Measured => Some(m / f),
            _ => None,
        };
    }
}

async fn run_one(m: &mut dyn Measure, options: &RunOptions) -> Row {
    let mut row = Row {
        name: m.name().to_owned(),
        group: m.group(),
        role: m.role(),
        outcome: Outcome::Failed,
        median_us: None,
        p10_us: None,
        p90_us: None,
        ratio_to_floor: None,
        iterations: 0,
        metric: None,
        note: None,
    };
    let setup = m.setup().await;
    let measured = match setup {
        Ok(Setup::Skip(reason)) => {
            row.outcome = Outcome::Skipped;
            row.note = Some(reason);
            Ok(())
        }
        Err(e) => Err(format!("setup: {e}")),
        Ok(Setup::Ready) => iterate(m, options, &mut row).await,
    };
    let teardown = m.teardown().await;
    row.name = m.name().to_owned();
    match (measured, teardown) {
        (Err(e), _) => {
            row.outcome = Outcome::Failed;
            row.note = Some(e);
        }
        (Ok(()), Err(e)) => {
            row.outcome = Outcome::Failed;
            row.note = Some(format!("teardown: {e}"));
        }
        (Ok(()), Ok(())) => {}
    }
    row
}

/// Warm-ups, timed iterations, statistics, metric and note.
async fn iterate(m: &mut dyn Measure, options: &RunOptions, row: &mut Row) -> Result<(), String> {
    let limit = options.iteration_limit;
    for i in 0..m.warmups() {
        once(m, limit)
            .await
            .map_err(|e| format!("warm-up {}: {e}", i + 1))?;
    }
    let n = m.iterations(options.iterations).max(1);
    let mut samples = Vec::with_capacity(n as usize);
    for i in 0..n {
        let took = once(m, limit)
            .await
            .map_err(|e| format!("iteration {}: {e}", i + 1))?;
        samples.push(took.as_secs_f64() * 1e6);
    }
    let summary = Summary::of(&samples).ok_or("no usable samples")?;
    row.outcome = Outcome::Measured;
    row.iterations = n;
    row.median_us = Some(summary.median);
    row.p10_us = Some(summary.p10);
    row.p90_us = Some(summary.p90);
    row.metric = m.metric(&summary);
    row.note = m.note();
    Ok(())
}

/// One timed iteration.
async fn once(m: &mut dyn Measure, limit: Duration) -> Result<Duration, BenchError> {
    let start = Instant::now();
    tokio::time::timeout(limit, m.iteration())
        .await
        .map_err(|_| BenchError::Timeout {
            seconds: limit.as_secs(),
        })??;
    Ok(start.elapsed())
}
