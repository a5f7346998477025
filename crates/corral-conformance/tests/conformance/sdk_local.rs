//! The SDK suite on the local backend: nothing fails, and the only skips
//! are the ones the local target declares (none where this host has `git`
//! and `python3`); nothing is left behind.

use crate::common;
use common::assert_passes_with_only_declared_skips;
use corral_conformance::SdkTarget;
use corral_conformance::sdk::Check;
use corral_conformance::targets::LocalTarget;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_backend_passes_with_only_its_declared_skips() {
    let target = LocalTarget::new().unwrap();
    let declared = SdkTarget::options(&target);
    assert!(!declared.live, "local runs offline");
    assert!(
        declared
            .unsupported
            .keys()
            .all(|c| matches!(c, Check::GitPush | Check::HttpProbe)),
        "local declares only what a host may lack: {:?}",
        declared.unsupported
    );
    assert_passes_with_only_declared_skips(&target).await;
}
