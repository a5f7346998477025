//! Shared checks of the conformance integration tests.
#![allow(dead_code)]

use corral_conformance::{ConformanceTarget, Outcome, Report, run_cases};
use corral_contract::ConformanceCase;

/// Runs one case against `target` and returns its report.
pub async fn run_one<T: ConformanceTarget>(target: &T, case: ConformanceCase) -> Report {
    let report = run_cases(target, &[case])
        .await
        .unwrap_or_else(|e| panic!("{} could not be run: {e}", target.name()));
    print!("{}", report.table());
    report
}

/// Requires `case` to have passed in `report`, showing its reason otherwise.
pub fn assert_passed(report: &Report, case: ConformanceCase) {
    let c = report
        .case(case)
        .unwrap_or_else(|| panic!("{case} is not in the report"));
    assert_eq!(
        c.outcome,
        Outcome::Passed,
        "{case} on {}: {}",
        report.target,
        c.reason.as_deref().unwrap_or("")
    );
    assert!(c.reason.is_none());
}

/// Requires `case` to have failed in `report`, returning its reason.
pub fn failed_reason(report: &Report, case: ConformanceCase) -> String {
    let c = report
        .case(case)
        .unwrap_or_else(|| panic!("{case} is not in the report"));
    assert_eq!(c.outcome, Outcome::Failed, "{case} did not fail");
    let reason = c.reason.clone().expect("a failure carries its reason");
    assert!(!reason.is_empty() && !reason.contains('\n'), "{reason:?}");
    reason
}

/// The cases with `outcome`, in report order.
pub fn with_outcome(report: &Report, outcome: Outcome) -> Vec<ConformanceCase> {
    report
        .cases
        .iter()
        .filter(|c| c.outcome == outcome)
        .map(|c| c.name)
        .collect()
}

/// Requires every skip to name exactly the tokens the envelope lacks.
pub fn assert_skips_name_their_missing_tokens(report: &Report) {
    for c in &report.cases {
        let missing = c.name.missing_tokens(&report.tokens);
        match c.outcome {
            Outcome::Skipped => {
                assert!(
                    !missing.is_empty(),
                    "{} skipped without a missing token",
                    c.name
                );
                let names: Vec<&str> = missing.iter().map(|t| t.as_str()).collect();
                assert_eq!(
                    c.reason.as_deref(),
                    Some(format!("missing tokens: {}", names.join(", ")).as_str()),
                    "{}",
                    c.name
                );
                assert_eq!(c.duration_ms, 0);
            }
            Outcome::Passed | Outcome::Failed => {
                assert!(missing.is_empty(), "{} ran without {missing:?}", c.name);
            }
        }
    }
}
