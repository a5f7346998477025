//! The SDK suite on the docker backend (a live run on a real engine):
//! nothing fails, the only skip is the one the docker target declares (no
//! git in the test image), and nothing is left in the target's scope.
//! Skipped with the reason where no Docker Engine answers.

use crate::common;
use common::assert_passes_with_only_declared_skips;
use corral_conformance::SdkTarget;
use corral_conformance::sdk::Check;
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
    assert_passes_with_only_declared_skips(&target).await;
}
