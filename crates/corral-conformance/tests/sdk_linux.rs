//! The SDK suite on the linux backend (a live run): nothing fails, and the
//! only skips are the ones the linux target declares; nothing is left
//! behind. Skipped with the reason where this host cannot make linux
//! sandboxes.

use corral_backend::{Backend, Labels};
use corral_conformance::Outcome;
use corral_conformance::sdk::{SdkCase, SdkTarget, run_sdk_target};
use corral_conformance::targets::{LinuxTarget, LinuxTargetError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linux_backend_passes_with_only_its_declared_skips() {
    let target = match LinuxTarget::new() {
        Ok(t) => t,
        Err(LinuxTargetError::Unavailable(reason)) => {
            eprintln!("skip: the SDK suite on linux: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let declared = SdkTarget::options(&target);
    assert!(declared.live, "linux runs only live");
    for (check, reason) in &declared.unsupported {
        eprintln!("skip: the linux target declares {check} unsupported here: {reason}");
    }
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
