//! The contract's minimum provider (the memory oracle narrowed to
//! `SandboxProviderCapabilities::minimum()`) runs three cases and records
//! "six skips of nine", with no failure.

use crate::common;
use std::collections::BTreeSet;

use common::{assert_passed, assert_skips_name_their_missing_tokens, with_outcome};
use corral_conformance::targets::{MinimalTarget, backend_inventory};
use corral_conformance::{Outcome, run};
use corral_contract::{CapabilityToken, ConformanceCase};

#[tokio::test]
async fn the_minimum_provider_records_six_skips_of_nine_and_no_failure() {
    let target = MinimalTarget::new();
    let report = run(&target).await.unwrap();
    let table = report.table();
    print!("{table}");
    use CapabilityToken as T;
    assert_eq!(
        report.run.tokens,
        BTreeSet::from([T::Process, T::NetworkNone, T::Zdr, T::Cleanup])
    );
    use ConformanceCase as C;
    assert_eq!(
        with_outcome(&report, Outcome::Skipped),
        [
            C::StageSealExecute,
            C::StageGitProject,
            C::CheckpointClone,
            C::AllowlistEgress,
            C::DurableRoundTrip,
            C::PausePinning,
        ]
    );
    for case in [C::NoneEgress, C::ZdrRelease, C::OrphanReclaim] {
        assert_passed(&report, case);
    }
    assert_eq!(report.count(Outcome::Failed), 0);
    assert_skips_name_their_missing_tokens(&report);
    let reason = |case| report.case(case).and_then(|c| c.reason.clone());
    assert_eq!(
        reason(C::StageGitProject).as_deref(),
        Some("missing tokens: filesystem")
    );
    assert_eq!(
        reason(C::AllowlistEgress).as_deref(),
        Some("missing tokens: network-allowlist")
    );
    assert_eq!(
        reason(C::PausePinning).as_deref(),
        Some("missing tokens: snapshot")
    );
    assert_eq!(table.lines().last(), Some("3 passed, 0 failed, 6 skipped"));
    let left = backend_inventory(&**target.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
}
