//! The evidence of one run of the SDK suite: an [`SdkReport`], as JSON and
//! as the same table the contract suite prints.

use corral_contract::Timestamp;
use serde::{Deserialize, Serialize};

use crate::report::{self, CaseLine, Outcome};
use crate::sdk::case::SdkCase;

/// One case's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkCaseReport {
    /// The case.
    pub name: SdkCase,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed, or the declared reason it was skipped (one line);
    /// `None` when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran, in milliseconds (0 for a skip).
    pub duration_ms: u64,
}

/// The evidence of one run of the SDK suite against one provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkReport {
    /// The target's name.
    pub target: String,
    /// The backend's own name (`Backend::name`).
    pub provider: String,
    /// Whether the run was allowed to reach real infrastructure.
    pub live: bool,
    /// One entry per case, in the suite's order.
    pub cases: Vec<SdkCaseReport>,
    /// The version of corral that ran the suite.
    pub corral_version: String,
    /// When the run started.
    pub started_at: Timestamp,
    /// When it finished.
    pub finished_at: Timestamp,
}

impl SdkReport {
    /// How many cases ended with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        report::count(&self.cases, outcome)
    }

    /// Whether no case failed (skips are not failures).
    pub fn succeeded(&self) -> bool {
        self.count(Outcome::Failed) == 0
    }

    /// The report of `case`, if it was part of the run.
    pub fn case(&self, case: SdkCase) -> Option<&SdkCaseReport> {
        self.cases.iter().find(|c| c.name == case)
    }

    /// The closing line: `N passed, N failed, N skipped`.
    pub fn summary(&self) -> String {
        report::summary(&self.cases)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// The human table: a heading naming the suite, the target and whether
    /// the run was live, one line per case (`name  outcome  duration
    /// reason`), and the summary line.
    pub fn table(&self) -> String {
        report::table(
            &format!(
                "conformance: suite sdk, target {} (provider {}, live: {})",
                self.target, self.provider, self.live
            ),
            &self.cases,
        )
    }
}

impl CaseLine for SdkCaseReport {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> SdkReport {
        let t = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        let case = |name, outcome, reason: Option<&str>, duration_ms| SdkCaseReport {
            name,
            outcome,
            reason: reason.map(str::to_string),
            duration_ms,
        };
        SdkReport {
            target: "example".into(),
            provider: "memory".into(),
            live: false,
            cases: vec![
                case(SdkCase::Commands, Outcome::Passed, None, 4),
                case(
                    SdkCase::GitPush,
                    Outcome::Skipped,
                    Some("unsupported gitPush: no git"),
                    0,
                ),
                case(SdkCase::Files, Outcome::Failed, Some("files.read: boom"), 2),
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
        assert_eq!(lines.len(), 5, "{table}");
        assert_eq!(
            lines[0],
            "conformance: suite sdk, target example (provider memory, live: false)"
        );
        assert!(lines[1].starts_with("commands ") && lines[1].contains("passed"));
        assert!(lines[2].contains("skipped") && lines[2].ends_with("unsupported gitPush: no git"));
        assert!(lines[3].contains("failed") && lines[3].ends_with("files.read: boom"));
        assert_eq!(lines[4], "1 passed, 1 failed, 1 skipped");
        assert!(!r.succeeded());
        assert_eq!(r.case(SdkCase::Files).unwrap().duration_ms, 2);
    }

    #[test]
    fn the_json_round_trips() {
        let r = report();
        let json = r.to_json().unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["cases"][1]["name"], "git-push");
        assert_eq!(value["cases"][1]["outcome"], "skipped");
        assert!(value["cases"][0].get("reason").is_none());
        let back: SdkReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}
