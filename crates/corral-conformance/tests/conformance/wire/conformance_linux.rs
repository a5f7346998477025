//! The nine contract cases over the wire against the linux backend, where
//! this host can make linux sandboxes: no case fails, every skip is the
//! one the envelope predicts, and nothing is left behind.

use super::common;
use crate::common::{
    assert_fails_nothing_and_names_every_skip, linux_target_or_skip, planned_skips,
};
use common::WireTarget;
use corral_conformance::Outcome;
use corral_conformance::targets::backend_inventory;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nine_cases_over_the_wire_on_linux_fail_nothing() {
    let Some((inner, _hosts)) = linux_target_or_skip("the nine cases over the wire on linux")
    else {
        return;
    };
    let target = WireTarget::over(inner).await;
    let report = assert_fails_nothing_and_names_every_skip(&target).await;
    let skipped: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .map(|c| c.name)
        .collect();
    assert_eq!(skipped, planned_skips(&report));
    assert!(report.count(Outcome::Passed) > 0);
    let left = backend_inventory(&**target.inner.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
}
