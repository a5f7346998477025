//! A target that was given no egress fixture (`corral conformance
//! --provider` without `--egress-allowed`/`--egress-denied`): its two
//! egress cases are recorded skips saying what to give, not failures of
//! the provider, and every other case runs as before.
//!
//! Contract, "Conformance": "A case whose tokens you do not declare is a
//! recorded skip, never a silent pass — it shows up in the evidence by
//! name." A case the caller gave no means to observe is likewise recorded
//! by name, with its reason, and never counted as passed.

use corral_conformance::targets::MemoryTarget;
use corral_conformance::{
    ConformanceTarget, EgressFixture, Inventory, NO_EGRESS_FIXTURE, Outcome, Target, run,
};
use corral_contract::{ConformanceCase, SandboxError};

/// The memory oracle with its fixtures taken away, one row per way.
#[derive(Debug)]
struct Without {
    inner: MemoryTarget,
    none_fixture: bool,
    allowlist_fixture: bool,
}

impl Target for Without {
    fn name(&self) -> String {
        "memory-without-fixture".into()
    }
}

impl ConformanceTarget for Without {
    type Provider = <MemoryTarget as ConformanceTarget>::Provider;

    fn provider(&self) -> Result<Self::Provider, SandboxError> {
        self.inner.provider()
    }

    fn egress(&self) -> Option<EgressFixture> {
        self.inner.egress().filter(|_| self.none_fixture)
    }

    fn allowlist_egress(&self) -> Option<EgressFixture> {
        self.inner.egress().filter(|_| self.allowlist_fixture)
    }

    async fn inventory(&self) -> Option<Result<Inventory, corral_backend::BackendError>> {
        self.inner.inventory().await
    }
}

#[tokio::test]
async fn an_egress_case_without_its_fixture_is_a_skip_naming_the_flags() {
    use ConformanceCase::{AllowlistEgress, NoneEgress};
    // (none fixture, allowlist fixture) → the egress cases skipped.
    let table: [(bool, bool, &[ConformanceCase]); 4] = [
        (false, false, &[AllowlistEgress, NoneEgress]),
        (true, false, &[AllowlistEgress]),
        (false, true, &[NoneEgress]),
        (true, true, &[]),
    ];
    for (none_fixture, allowlist_fixture, skipped) in table {
        let target = Without {
            inner: MemoryTarget::new(),
            none_fixture,
            allowlist_fixture,
        };
        let report = run(&target).await.unwrap();
        let row = format!("none fixture {none_fixture}, allowlist fixture {allowlist_fixture}");
        for case in &report.cases {
            if skipped.contains(&case.name) {
                assert_eq!(case.outcome, Outcome::Skipped, "{row}: {}", case.name);
                assert_eq!(case.reason.as_deref(), Some(NO_EGRESS_FIXTURE), "{row}");
                assert_eq!(case.duration_ms, 0, "{row}");
            } else {
                assert_eq!(
                    case.outcome,
                    Outcome::Passed,
                    "{row}: {} {:?}",
                    case.name,
                    case.reason
                );
            }
        }
        assert!(report.succeeded(), "{row}");
    }
    assert!(NO_EGRESS_FIXTURE.contains("--egress-allowed HOST:PORT"));
    assert!(NO_EGRESS_FIXTURE.contains("--egress-denied HOST:PORT"));
}
