//! The evidence a run of either suite leaves: a [`Report`] of one line per
//! case, as JSON and as a table.

use std::fmt::Write as _;
use std::time::Instant;

use corral_contract::{ConformanceCase, Timestamp};
use serde::{Deserialize, Serialize};

use crate::case::SuiteCase;
use crate::failure::Failure;
use crate::suite::stamp;

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

/// One case's evidence, whatever the suite: a [`CaseReport`] is a contract
/// case's line, a `CaseReport<SdkCase>` an SDK case's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound = "")]
pub struct CaseReport<C: SuiteCase = ConformanceCase> {
    /// The case.
    pub name: C,
    /// What the suite records of the case (a contract case: the tokens it
    /// requires), as fields of the line itself.
    #[serde(flatten)]
    pub detail: C::Detail,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed or was skipped (one line); `None` when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it ran, in milliseconds (0 for a skip).
    pub duration_ms: u64,
}

impl<C: SuiteCase> CaseReport<C> {
    /// The line of `case`, skipped for `reason`.
    pub(crate) fn skipped(case: C, reason: String) -> Self {
        Self {
            name: case,
            detail: case.detail(),
            outcome: Outcome::Skipped,
            reason: Some(reason),
            duration_ms: 0,
        }
    }

    /// Runs `case`'s `attempt` and records how it ended: passed, or failed
    /// with the failure's reason, and how long it ran.
    pub(crate) async fn attempted(
        case: C,
        attempt: impl Future<Output = Result<(), Failure>>,
    ) -> Self {
        let start = Instant::now();
        let result = attempt.await;
        let duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (outcome, reason) = match result {
            Ok(()) => (Outcome::Passed, None),
            Err(f) => (Outcome::Failed, Some(f.into_reason())),
        };
        Self {
            name: case,
            detail: case.detail(),
            outcome,
            reason,
            duration_ms,
        }
    }
}

/// The evidence of one run of a suite against one target: a [`Report`] is
/// the contract suite's, a `Report<SdkCase>` the SDK suite's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound = "")]
pub struct Report<C: SuiteCase = ConformanceCase> {
    /// The target's name.
    pub target: String,
    /// What the suite records of the run (the contract suite: the envelope
    /// and its tokens; the SDK suite: the provider and whether the run was
    /// live), as fields of the report itself.
    #[serde(flatten)]
    pub run: C::Run,
    /// One entry per case, in the suite's order.
    pub cases: Vec<CaseReport<C>>,
    /// The version of corral that ran the suite.
    pub corral_version: String,
    /// When the run started.
    pub started_at: Timestamp,
    /// When it finished.
    pub finished_at: Timestamp,
}

impl<C: SuiteCase> Report<C> {
    /// The report of a run of `cases` against `target` that started at
    /// `started_at` and finishes now.
    pub(crate) fn finished(
        target: String,
        run: C::Run,
        cases: Vec<CaseReport<C>>,
        started_at: Timestamp,
    ) -> Self {
        Self {
            target,
            run,
            cases,
            corral_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            finished_at: stamp(),
        }
    }

    /// How many cases ended with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == outcome).count()
    }

    /// Whether no case failed (skips are not failures).
    pub fn succeeded(&self) -> bool {
        self.count(Outcome::Failed) == 0
    }

    /// The report of `case`, if it was part of the run.
    pub fn case(&self, case: C) -> Option<&CaseReport<C>> {
        self.cases.iter().find(|c| c.name == case)
    }

    /// The closing line: `N passed, N failed, N skipped`.
    pub fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.count(Outcome::Passed),
            self.count(Outcome::Failed),
            self.count(Outcome::Skipped)
        )
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// The human table: a heading naming the target and what matters of
    /// the run, one line per case (`name  outcome  duration  reason`, the
    /// names padded to the longest), and the summary line.
    pub fn table(&self) -> String {
        let mut out = format!("{}\n", C::heading(&self.target, &self.run));
        let width = self
            .cases
            .iter()
            .map(|c| c.name.name().len())
            .max()
            .unwrap_or(0);
        for c in &self.cases {
            let line = table_line(
                c.name.name(),
                width,
                c.outcome,
                c.duration_ms,
                c.reason.as_deref(),
            );
            let _ = writeln!(out, "{line}");
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }
}

/// Told of a run as it goes, so that a person watching sees each case when
/// it settles instead of the whole table when the suite ends. The lines are
/// the report's table's: the heading, then one line per case, padded to
/// the suite's longest case name.
pub trait Observer<C: SuiteCase>: Send {
    /// The run began: the table's first line.
    fn began(&mut self, heading: &str);

    /// A case settled: its line of the table.
    fn settled(&mut self, line: &str);
}

/// The observer of a run nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl<C: SuiteCase> Observer<C> for Unobserved {
    fn began(&mut self, _heading: &str) {}

    fn settled(&mut self, _line: &str) {}
}

impl<C: SuiteCase> CaseReport<C> {
    /// The case's line as a run's observer is told it: padded to the
    /// longest name of the suite.
    pub(crate) fn observed_line(&self) -> String {
        let width = C::all().iter().map(|c| c.name().len()).max().unwrap_or(0);
        table_line(
            self.name.name(),
            width,
            self.outcome,
            self.duration_ms,
            self.reason.as_deref(),
        )
    }
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
    use corral_contract::SandboxProviderCapabilities;

    use super::*;
    use crate::case::{ContractRun, RequiredTokens};
    use crate::sdk::{SdkCase, SdkRun};

    fn timestamp() -> Timestamp {
        Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap()
    }

    fn line<C: SuiteCase>(
        name: C,
        outcome: Outcome,
        reason: Option<&str>,
        duration_ms: u64,
    ) -> CaseReport<C> {
        CaseReport {
            name,
            detail: name.detail(),
            outcome,
            reason: reason.map(str::to_string),
            duration_ms,
        }
    }

    fn report() -> Report {
        Report {
            target: "example".into(),
            run: ContractRun {
                envelope: SandboxProviderCapabilities::minimum(),
                tokens: SandboxProviderCapabilities::minimum().conformance_tokens(),
            },
            cases: vec![
                line(ConformanceCase::NoneEgress, Outcome::Passed, None, 12),
                line(
                    ConformanceCase::CheckpointClone,
                    Outcome::Skipped,
                    Some("missing tokens: snapshot"),
                    0,
                ),
                line(
                    ConformanceCase::ZdrRelease,
                    Outcome::Failed,
                    Some("release: boom"),
                    3,
                ),
            ],
            corral_version: "0.0.0".into(),
            started_at: timestamp(),
            finished_at: timestamp(),
        }
    }

    fn sdk_report() -> Report<SdkCase> {
        Report {
            target: "example".into(),
            run: SdkRun {
                provider: "memory".into(),
                live: false,
            },
            cases: vec![
                line(SdkCase::Commands, Outcome::Passed, None, 4),
                line(
                    SdkCase::GitPush,
                    Outcome::Skipped,
                    Some("unsupported gitPush: no git"),
                    0,
                ),
                line(SdkCase::Files, Outcome::Failed, Some("files.read: boom"), 2),
            ],
            corral_version: "0.0.0".into(),
            started_at: timestamp(),
            finished_at: timestamp(),
        }
    }

    #[test]
    fn a_contract_line_records_the_tokens_its_case_requires() {
        let case = ConformanceCase::PausePinning;
        let RequiredTokens { required } = case.detail();
        assert_eq!(required, case.required_tokens());
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
    fn the_sdk_table_has_one_line_per_case_and_ends_with_the_counts() {
        let r = sdk_report();
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

    #[test]
    fn the_sdk_json_round_trips() {
        let r = sdk_report();
        let json = r.to_json().unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["cases"][1]["name"], "git-push");
        assert_eq!(value["cases"][1]["outcome"], "skipped");
        assert!(value["cases"][0].get("reason").is_none());
        assert!(value["cases"][0].get("required").is_none());
        assert_eq!(value["provider"], "memory");
        assert_eq!(value["live"], false);
        let back: Report<SdkCase> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }

    /// A field no report of the suite has, where it is added → the field
    /// named in the refusal. The run's and the lines' own fields are
    /// inlined into the report, and still nothing unknown gets through.
    #[test]
    fn reports_refuse_fields_they_do_not_have() {
        let contract: serde_json::Value =
            serde_json::from_str(&report().to_json().unwrap()).unwrap();
        let sdk: serde_json::Value =
            serde_json::from_str(&sdk_report().to_json().unwrap()).unwrap();
        let refusals: &[(&str, &serde_json::Value, &str, &str)] = &[
            ("contract report", &contract, "", "note"),
            ("contract line", &contract, "/cases/0", "note"),
            ("sdk field in a contract report", &contract, "", "live"),
            ("sdk report", &sdk, "", "note"),
            ("sdk line", &sdk, "/cases/0", "note"),
            ("contract field in an sdk report", &sdk, "", "envelope"),
            (
                "contract field in an sdk line",
                &sdk,
                "/cases/0",
                "required",
            ),
        ];
        for (attack, original, at, field) in refusals {
            let mut value = (*original).clone();
            value
                .pointer_mut(at)
                .and_then(serde_json::Value::as_object_mut)
                .unwrap()
                .insert((*field).to_string(), serde_json::json!([]));
            let text = value.to_string();
            let e = if std::ptr::eq(*original, &contract) {
                serde_json::from_str::<Report>(&text).map(drop).unwrap_err()
            } else {
                serde_json::from_str::<Report<SdkCase>>(&text)
                    .map(drop)
                    .unwrap_err()
            };
            assert!(e.to_string().contains(field), "{attack}: {e}");
        }
    }
}
