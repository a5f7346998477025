//! Shared checks of the conformance integration tests.

use corral_backend::{Backend, Labels};
use corral_conformance::sdk::{SdkCase, SdkReport, run_sdk_target};
use corral_conformance::targets::{LinuxTarget, LinuxTargetError};
use corral_conformance::{
    ConformanceTarget, EgressFixture, EgressProbe, Outcome, Report, SdkTarget, run, run_cases,
};
use corral_contract::{ConformanceCase, HostPort};
use corral_testkit::testhost::TestHost;

/// The two test hosts a linux target's allowlist case probes: they must
/// outlive every sandbox that reaches them.
pub type AllowlistHosts = Option<Box<[TestHost; 2]>>;

/// The port the allowlist fixture's test hosts serve on.
const TEST_HOST_PORT: u16 = 8080;

/// A linux target, or `None` after printing why `test` is skipped where
/// this host cannot make linux sandboxes. Where the backend enforces
/// allowlists, the target probes two test hosts in network namespaces made
/// here (returned beside it): the fixture `corral conformance` is given
/// with `--egress-allowed`/`--egress-denied`. Any other error fails the test.
pub fn linux_target_or_skip(test: &str) -> Option<(LinuxTarget, AllowlistHosts)> {
    let target = match LinuxTarget::new() {
        Ok(t) => t,
        Err(LinuxTargetError::Unavailable(reason)) => {
            eprintln!("skip: {test}: {reason}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    if !target.backend().capabilities().enforces.network_allowlist {
        return Some((target, None));
    }
    let host = || {
        let mut host = TestHost::new().unwrap_or_else(|e| panic!("a test host: {e}"));
        host.serve(TEST_HOST_PORT, "ok\n")
            .unwrap_or_else(|e| panic!("a test host's server: {e}"));
        host
    };
    let hosts = Box::new([host(), host()]);
    let [allowed, denied] =
        [&hosts[0], &hosts[1]].map(|h| HostPort::new(format!("{}:{TEST_HOST_PORT}", h.addr())));
    let fixture = EgressFixture {
        allowed: allowed.unwrap(),
        denied: denied.unwrap(),
        probe: EgressProbe::Curl,
    };
    Some((target.with_allowlist_egress(fixture), Some(hosts)))
}

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
///
/// Contract, "Conformance": "A case whose tokens you do not declare is a
/// recorded skip, never a silent pass — it shows up in the evidence by
/// name."; and a case whose tokens are declared runs.
pub fn assert_skips_name_their_missing_tokens(report: &Report) {
    for c in &report.cases {
        let missing = c.name.missing_tokens(&report.run.tokens);
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

/// Runs the whole contract suite against `target` and requires that no
/// case failed, that every skip names exactly the tokens the envelope
/// lacks, and that the target's inventory is empty afterwards. Returns the
/// report.
pub async fn assert_fails_nothing_and_names_every_skip<T: ConformanceTarget>(target: &T) -> Report {
    let report = run(target).await.unwrap();
    print!("{}", report.table());
    for c in &report.cases {
        assert_ne!(
            c.outcome,
            Outcome::Failed,
            "{}: {}",
            c.name,
            c.reason.as_deref().unwrap_or("")
        );
    }
    assert_skips_name_their_missing_tokens(&report);
    let left = target
        .inventory()
        .await
        .expect("the target keeps an inventory")
        .unwrap();
    assert!(left.is_empty(), "the suite left {left}");
    report
}

/// The cases the envelope of `report` plans to skip (those it lacks a
/// token for), in plan order.
pub fn planned_skips(report: &Report) -> Vec<ConformanceCase> {
    report
        .run
        .envelope
        .conformance_plan()
        .into_iter()
        .filter(|(_, missing)| !missing.is_empty())
        .map(|(case, _)| case)
        .collect()
}

/// The SDK cases of `report` that ended with `outcome`, in report order.
pub fn sdk_with_outcome(report: &SdkReport, outcome: Outcome) -> Vec<SdkCase> {
    report
        .cases
        .iter()
        .filter(|c| c.outcome == outcome)
        .map(|c| c.name)
        .collect()
}

/// Runs the SDK suite against `target` with the options it declares, and
/// requires that no case failed, that the skipped cases are exactly the
/// ones its declared checks skip, and that its backend lists no sandbox
/// afterwards. Returns the report.
pub async fn assert_passes_with_only_declared_skips<T: SdkTarget>(target: &T) -> SdkReport {
    let declared = target.options();
    for (check, reason) in &declared.unsupported {
        eprintln!(
            "skip: the {} target declares {check} unsupported here: {reason}",
            target.name()
        );
    }
    let report = run_sdk_target(target).await.unwrap();
    print!("{}", report.table());
    assert!(
        sdk_with_outcome(&report, Outcome::Failed).is_empty(),
        "{}",
        report.table()
    );
    let expected: Vec<SdkCase> = SdkCase::ALL
        .iter()
        .copied()
        .filter(|c| {
            c.skipped_by()
                .iter()
                .any(|check| declared.unsupported.contains_key(check))
        })
        .collect();
    assert_eq!(
        sdk_with_outcome(&report, Outcome::Skipped),
        expected,
        "{}",
        report.table()
    );
    let left = target.backend().list(&Labels::new()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left:?}");
    report
}
