//! The SDK suite on the local backend: nothing fails, and the only skips
//! are the ones the local target declares (none where this host has `git`
//! and `python3`); nothing is left behind.

use corral_backend::{Backend, Labels};
use corral_conformance::Outcome;
use corral_conformance::sdk::{Check, SdkCase, SdkTarget, run_sdk_target};
use corral_conformance::targets::LocalTarget;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_backend_passes_with_only_its_declared_skips() {
    let target = LocalTarget::new().unwrap();
    let declared = SdkTarget::options(&target);
    assert!(!declared.live, "local runs offline");
    for (check, reason) in &declared.unsupported {
        eprintln!("skip: the local target declares {check} unsupported here: {reason}");
    }
    assert!(
        declared
            .unsupported
            .keys()
            .all(|c| matches!(c, Check::GitPush | Check::HttpProbe)),
        "local declares only what a host may lack: {:?}",
        declared.unsupported
    );
    let report = run_sdk_target(&target).await.unwrap();
    print!("{}", report.table());
    let failed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Failed)
        .collect();
    assert!(failed.is_empty(), "{}", report.table());
    let skipped: Vec<SdkCase> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skipped)
        .map(|c| c.name)
        .collect();
    let expected: Vec<SdkCase> = SdkCase::ALL
        .iter()
        .copied()
        .filter(|c| {
            c.skipped_by()
                .iter()
                .any(|check| declared.unsupported.contains_key(check))
        })
        .collect();
    assert_eq!(skipped, expected, "{}", report.table());
    let left = target.backend().list(&Labels::new()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left:?}");
}
