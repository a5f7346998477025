//! The SDK suite on the linux backend (a live run): nothing fails, and the
//! only skips are the ones the linux target declares; nothing is left
//! behind. Skipped with the reason where this host cannot make linux
//! sandboxes.

use crate::common;
use common::{assert_passes_with_only_declared_skips, linux_target_or_skip};
use corral_conformance::SdkTarget;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linux_backend_passes_with_only_its_declared_skips() {
    let Some((target, _hosts)) = linux_target_or_skip("the SDK suite on linux") else {
        return;
    };
    let declared = SdkTarget::options(&target);
    assert!(declared.live, "linux runs only live");
    assert_passes_with_only_declared_skips(&target).await;
}
