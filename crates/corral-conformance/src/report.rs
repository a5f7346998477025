//! The evidence a run leaves: a [`Report`], as JSON and as a table.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use corral_contract::{CapabilityToken, ConformanceCase, SandboxProviderCapabilities, Timestamp};
use serde::{Deserialize, Serialize};

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The case ran and everything it asserts held.
    Passed,
    /// The case ran and an assertion failed (its reason says which).
    Failed,
    /// The case did not run: the target lacks a token it requires, or the
    /// runtime declared it unsupported (its reason says which).
    Skipped,
}

impl Outcome {
    /// The wire spelling: `passed`, `failed`, `skipped`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }
}

/// One case's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseReport {
    /// The case.
    pub name: ConformanceCase,
    /// The tokens it requires.
    pub required: Vec<CapabilityToken>,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed or was skipped (one line); `None` when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran, in milliseconds (0 for a skip).
    pub duration_ms: u64,
}

/// The evidence of one run of the suite against one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The target's name.
    pub target: String,
    /// The envelope the target's provider advertised.
    pub envelope: SandboxProviderCapabilities,
    /// The tokens derived from it.
    pub tokens: BTreeSet<CapabilityToken>,
    /// One entry per case, in the contract's order.
    pub cases: Vec<CaseReport>,
    /// The version of corral that ran the suite.
    pub corral_version: String,
    /// When the run started.
    pub started_at: Timestamp,
    /// When it finished.
    pub finished_at: Timestamp,
}

impl Report {
    /// How many cases ended with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        count(&self.cases, outcome)
    }

    /// Whether no case failed (skips are not failures).
    pub fn succeeded(&self) -> bool {
        self.count(Outcome::Failed) == 0
    }

    /// The report of `case`, if it was part of the run.
    pub fn case(&self, case: ConformanceCase) -> Option<&CaseReport> {
        self.cases.iter().find(|c| c.name == case)
    }

    /// The closing line: `N passed, N failed, N skipped`.
    pub fn summary(&self) -> String {
        summary(&self.cases)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// The human table: a heading naming the target and its tokens, one line
    /// per case (`name  outcome  duration  reason`), and the summary line.
    pub fn table(&self) -> String {
        let tokens: Vec<&str> = self.tokens.iter().map(|t| t.as_str()).collect();
        table(
            &format!(
                "conformance: target {} (tokens: {})",
                self.target,
                tokens.join(", ")
            ),
            &self.cases,
        )
    }
}

/// One line of evidence, whatever the suite: what the counts, the summary
/// and the table read from a case report.
pub(crate) trait CaseLine {
    /// The case's name.
    fn name(&self) -> &'static str;
    /// How it ended.
    fn outcome(&self) -> Outcome;
    /// How long it ran, in milliseconds.
    fn duration_ms(&self) -> u64;
    /// Why it failed or was skipped.
    fn reason(&self) -> Option<&str>;
}

impl CaseLine for CaseReport {
    fn name(&self) -> &'static str {
        self.name.as_str()
    }
    fn outcome(&self) -> Outcome {
        self.outcome
    }
    fn duration_ms(&self) -> u64 {
        self.duration_ms
    }
    fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// How many of `cases` ended with `outcome`.
pub(crate) fn count<C: CaseLine>(cases: &[C], outcome: Outcome) -> usize {
    cases.iter().filter(|c| c.outcome() == outcome).count()
}

/// The closing line of every suite: `N passed, N failed, N skipped`.
pub(crate) fn summary<C: CaseLine>(cases: &[C]) -> String {
    format!(
        "{} passed, {} failed, {} skipped",
        count(cases, Outcome::Passed),
        count(cases, Outcome::Failed),
        count(cases, Outcome::Skipped)
    )
}

/// Every suite's table: `heading`, one [`table_line`] per case with the
/// names padded to the longest, and the [`summary`] line.
pub(crate) fn table<C: CaseLine>(heading: &str, cases: &[C]) -> String {
    let mut out = format!("{heading}\n");
    let width = cases.iter().map(|c| c.name().len()).max().unwrap_or(0);
    for c in cases {
        let line = table_line(c.name(), width, c.outcome(), c.duration_ms(), c.reason());
        let _ = writeln!(out, "{line}");
    }
    out.push_str(&summary(cases));
    out.push('\n');
    out
}

/// One line of a report table: `name  outcome  duration  reason`, the name
/// padded to `width`, no trailing blanks.
fn table_line(
    name: &str,
    width: usize,
    outcome: Outcome,
    duration_ms: u64,
    reason: Option<&str>,
) -> String {
    let time = match outcome {
        Outcome::Skipped => "-".to_string(),
        Outcome::Passed | Outcome::Failed => format!("{duration_ms} ms"),
    };
    let line = format!(
        "{name:<width$}  {:<7}  {time:>9}  {}",
        outcome.as_str(),
        reason.unwrap_or(""),
    );
    line.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let t = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        Report {
            target: "example".into(),
            envelope: SandboxProviderCapabilities::minimum(),
            tokens: SandboxProviderCapabilities::minimum().conformance_tokens(),
            cases: vec![
                CaseReport {
                    name: ConformanceCase::NoneEgress,
                    required: ConformanceCase::NoneEgress.required_tokens().to_vec(),
                    outcome: Outcome::Passed,
                    reason: None,
                    duration_ms: 12,
                },
                CaseReport {
                    name: ConformanceCase::CheckpointClone,
                    required: ConformanceCase::CheckpointClone.required_tokens().to_vec(),
                    outcome: Outcome::Skipped,
                    reason: Some("missing tokens: snapshot".into()),
                    duration_ms: 0,
                },
                CaseReport {
                    name: ConformanceCase::ZdrRelease,
                    required: ConformanceCase::ZdrRelease.required_tokens().to_vec(),
                    outcome: Outcome::Failed,
                    reason: Some("release: boom".into()),
                    duration_ms: 3,
                },
            ],
            corral_version: "0.0.0".into(),
            started_at: t,
            finished_at: t,
        }
    }

    #[test]
    fn the_table_has_one_line_per_case_and_ends_with_the_counts() {
        let r = report();
        let table = r.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 1, "{table}");
        assert!(lines[0].contains("target example"));
        assert!(lines[0].contains("network-none"));
        assert!(lines[1].starts_with("none-egress") && lines[1].contains("passed"));
        assert!(lines[2].contains("skipped") && lines[2].ends_with("missing tokens: snapshot"));
        assert!(lines[3].contains("failed") && lines[3].ends_with("release: boom"));
        assert_eq!(lines[4], "1 passed, 1 failed, 1 skipped");
        assert!(!r.succeeded());
    }

    #[test]
    fn the_json_round_trips_with_the_documented_fields() {
        let r = report();
        let json = r.to_json().unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        for field in [
            "target",
            "envelope",
            "tokens",
            "cases",
            "corral_version",
            "started_at",
            "finished_at",
        ] {
            assert!(value.get(field).is_some(), "{field} missing from {json}");
        }
        assert_eq!(value["cases"][1]["outcome"], "skipped");
        assert_eq!(value["cases"][1]["name"], "checkpoint-clone");
        assert_eq!(value["cases"][1]["required"][0], "snapshot");
        assert!(value["cases"][0].get("reason").is_none());
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}
