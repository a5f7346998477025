//! The SDK suite on the linux backend (a live run): nothing fails, and the
//! only skips are the ones the linux target declares; nothing is left
//! behind. Skipped with the reason where this host cannot make linux
//! sandboxes.

mod common;

use common::assert_passes_with_only_declared_skips;
use corral_conformance::sdk::SdkTarget;
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
    assert_passes_with_only_declared_skips(&target).await;
}
