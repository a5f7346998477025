//! The SDK suite on the docker backend (a live run on a real engine):
//! nothing fails, the only skip is the one the docker target declares (no
//! git in the test image), and nothing is left in the target's scope.
//! Skipped with the reason where no Docker Engine answers.

use corral_backend::{Backend, Labels};
use corral_conformance::Outcome;
use corral_conformance::sdk::{Check, SdkCase, SdkTarget, run_sdk_target};
use corral_conformance::targets::{DockerTarget, DockerTargetError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_docker_backend_passes_with_only_its_declared_skips() {
    let target = match DockerTarget::new().await {
        Ok(t) => t,
        Err(DockerTargetError::Unavailable(reason)) => {
            eprintln!("skip: the SDK suite on docker: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let declared = SdkTarget::options(&target);
    assert!(declared.live, "docker runs only live");
    let unsupported: Vec<Check> = declared.unsupported.keys().copied().collect();
    assert_eq!(
        unsupported,
        vec![Check::GitPush],
        "the docker target's declared skips"
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
    let left = DockerTarget::backend(&target)
        .list(&Labels::new())
        .await
        .unwrap();
    assert!(left.is_empty(), "the suite left {left:?}");
}
