//! Running cases against a target and collecting the [`Report`].

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use corral_contract::{CapabilityToken, ConformanceCase, SandboxError, SandboxProvider, Timestamp};
use corral_runtime::runtime::Runtime;

use crate::case::{ContractRun, SuiteCase};
use crate::cases;
use crate::failure::Failure;
use crate::report::{CaseReport, Observer, Report, Unobserved};
use crate::scope::contract::ContractScope;
use crate::target::{ConformanceTarget, Inventory, NO_EGRESS_FIXTURE};

/// The longest one case may run before it fails as timed out.
pub const CASE_BOUND: Duration = Duration::from_secs(120);

/// The longest a case's cleanup may take.
pub const CLEANUP_BOUND: Duration = Duration::from_secs(60);

/// A suite this crate runs. A closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suite {
    /// The provider contract's nine conformance cases.
    Contract,
    /// The SDK's conformance suite ([`crate::sdk`]), run through the SDK
    /// against a backend.
    Sdk,
}

impl Suite {
    /// Every suite.
    pub const ALL: &'static [Suite] = &[Suite::Contract, Suite::Sdk];

    /// The suite's name on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Contract => "contract",
            Self::Sdk => "sdk",
        }
    }

    /// The suite called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == name)
    }

    /// The contract cases the suite runs, in order. The SDK suite runs no
    /// contract case: its cases are [`crate::sdk::SdkCase::ALL`], run by
    /// [`crate::sdk::run_sdk`].
    pub fn cases(self) -> &'static [ConformanceCase] {
        match self {
            Self::Contract => ConformanceCase::ALL,
            Self::Sdk => &[],
        }
    }
}

/// The current instant (the wall clock is always inside the timestamp
/// range, years 0000–9999).
pub(crate) fn stamp() -> Timestamp {
    Timestamp::from_system_time(SystemTime::now()).unwrap_or(Timestamp::MAX)
}

/// Runs the nine contract cases against `target`.
///
/// Fails only when the target cannot produce a runtime at all (its
/// provider or the runtime refuses to be built); every case outcome,
/// including failures, is in the report.
pub async fn run<T: ConformanceTarget>(target: &T) -> Result<Report, SandboxError> {
    run_observed(target, &mut Unobserved).await
}

/// [`run`], telling `observer` of each case as it settles.
pub async fn run_observed<T: ConformanceTarget>(
    target: &T,
    observer: &mut dyn Observer<ConformanceCase>,
) -> Result<Report, SandboxError> {
    run_cases_observed(target, Suite::Contract.cases(), observer).await
}

/// Runs `cases` against `target`, in order. A case whose tokens the target
/// lacks is a recorded skip naming the missing tokens.
pub async fn run_cases<T: ConformanceTarget>(
    target: &T,
    cases: &[ConformanceCase],
) -> Result<Report, SandboxError> {
    run_cases_observed(target, cases, &mut Unobserved).await
}

/// [`run_cases`], telling `observer` of each case as it settles.
async fn run_cases_observed<T: ConformanceTarget>(
    target: &T,
    cases: &[ConformanceCase],
    observer: &mut dyn Observer<ConformanceCase>,
) -> Result<Report, SandboxError> {
    let started_at = stamp();
    let envelope = Runtime::new(target.provider()?)?.capabilities().clone();
    let tokens = envelope.conformance_tokens();
    let run = ContractRun { envelope, tokens };
    observer.began(&ConformanceCase::heading(&target.name(), &run));
    let mut reports = Vec::with_capacity(cases.len());
    for case in cases {
        let report = run_case(target, &run.tokens, *case).await;
        observer.settled(&report.observed_line());
        reports.push(report);
    }
    Ok(Report::finished(target.name(), run, reports, started_at))
}

/// Runs one case (or records its skip).
async fn run_case<T: ConformanceTarget>(
    target: &T,
    tokens: &BTreeSet<CapabilityToken>,
    case: ConformanceCase,
) -> CaseReport {
    let missing = case.missing_tokens(tokens);
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|t| t.as_str()).collect();
        return CaseReport::skipped(case, format!("missing tokens: {}", names.join(", ")));
    }
    if !has_its_fixture(target, case) {
        return CaseReport::skipped(case, NO_EGRESS_FIXTURE.to_string());
    }
    CaseReport::attempted(case, attempt(target, case)).await
}

/// Whether `target` has what `case` probes with: each egress case needs its
/// fixture, which a caller may not have given (`corral conformance
/// --provider` without `--egress-allowed`/`--egress-denied`). Without one
/// the case is a recorded skip saying what to give, never a pass and never
/// a failure of the provider.
fn has_its_fixture<T: ConformanceTarget>(target: &T, case: ConformanceCase) -> bool {
    match case {
        ConformanceCase::NoneEgress => target.egress().is_some(),
        ConformanceCase::AllowlistEgress => target.allowlist_egress().is_some(),
        ConformanceCase::StageSealExecute
        | ConformanceCase::StageGitProject
        | ConformanceCase::CheckpointClone
        | ConformanceCase::DurableRoundTrip
        | ConformanceCase::ZdrRelease
        | ConformanceCase::OrphanReclaim
        | ConformanceCase::PausePinning => true,
    }
}

/// The backend's inventory, where the target observes it.
async fn inventory<T: ConformanceTarget>(target: &T) -> Result<Option<Inventory>, Failure> {
    match target.inventory().await {
        None => Ok(None),
        Some(Ok(i)) => Ok(Some(i)),
        Some(Err(e)) => Err(Failure::step("reading the backend's inventory", e)),
    }
}

/// `work` under `bound`; past it, the failure `late` makes. Every suite
/// bounds its case bodies with this.
pub(crate) async fn bounded(
    bound: Duration,
    work: impl Future<Output = Result<(), Failure>>,
    late: impl FnOnce() -> Failure,
) -> Result<(), Failure> {
    tokio::time::timeout(bound, work)
        .await
        .unwrap_or_else(|_| Err(late()))
}

/// A case's cleanup under [`CLEANUP_BOUND`], whatever the suite.
pub(crate) async fn bounded_cleanup(
    cleanup: impl Future<Output = Result<(), Failure>>,
) -> Result<(), Failure> {
    bounded(CLEANUP_BOUND, cleanup, || {
        Failure::new(format_args!(
            "cleanup did not finish within {} s",
            CLEANUP_BOUND.as_secs()
        ))
    })
    .await
}

/// Runs the case body under [`CASE_BOUND`], then its cleanup under
/// [`CLEANUP_BOUND`] whatever the body did, then checks that the backend
/// holds nothing the case allocated. The first failure is the reason.
async fn attempt<T: ConformanceTarget>(target: &T, case: ConformanceCase) -> Result<(), Failure> {
    let before = inventory(target).await?;
    let mut scope = ContractScope::new(target, case)?;
    let body = bounded(CASE_BOUND, cases::run(case, &mut scope), || {
        Failure::new(format_args!(
            "did not finish within {} s",
            CASE_BOUND.as_secs()
        ))
    })
    .await;
    let cleanup = bounded_cleanup(scope.finish()).await;
    body?;
    cleanup?;
    if let Some(before) = before {
        let after = inventory(target)
            .await?
            .ok_or_else(|| Failure::new("the backend's inventory became unavailable"))?;
        let leaked = after.added_since(&before);
        if !leaked.is_empty() {
            return Err(Failure::new(format_args!(
                "the case left state in the backend: {leaked}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_named() {
        assert_eq!(Suite::parse("contract"), Some(Suite::Contract));
        assert_eq!(Suite::parse("sdk"), Some(Suite::Sdk));
        assert_eq!(Suite::parse("sdk-v2"), None);
        assert_eq!(Suite::Contract.cases().len(), 9);
        assert!(Suite::Sdk.cases().is_empty());
        assert_eq!(Suite::Contract.as_str(), "contract");
    }
}
