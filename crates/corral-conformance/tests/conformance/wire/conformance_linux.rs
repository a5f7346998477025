//! The nine contract cases over the wire against the linux backend, where
//! this host can make linux sandboxes: no case fails, every skip is the
//! one the envelope predicts, and nothing is left behind.

use super::common;
use common::WireTarget;
use corral_conformance::targets::{LinuxTarget, LinuxTargetError, backend_inventory};
use corral_conformance::{Outcome, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nine_cases_over_the_wire_on_linux_fail_nothing() {
    let inner = match LinuxTarget::new() {
        Ok(t) => t,
        Err(LinuxTargetError::Unavailable(reason)) => {
            eprintln!("skip: linux sandboxes are unavailable here: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let target = WireTarget::over(inner).await;
    let report = run(&target).await.unwrap();
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
    let planned: Vec<_> = report
        .run
        .envelope
        .conformance_plan()
        .into_iter()
        .filter(|(_, missing)| !missing.is_empty())
        .map(|(case, _)| case)
        .collect();
    let skipped: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .map(|c| c.name)
        .collect();
    assert_eq!(skipped, planned);
    assert!(report.count(Outcome::Passed) > 0);
    let left = backend_inventory(&**target.inner.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
}
