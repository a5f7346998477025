//! The linux backend behind the contract adapter: no case fails, and every
//! skip names the token its envelope does not earn.

use crate::common;
use common::{
    assert_fails_nothing_and_names_every_skip, linux_target_or_skip, planned_skips, with_outcome,
};
use corral_conformance::Outcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linux_backend_fails_nothing_and_names_every_skip() {
    let Some((target, _hosts)) = linux_target_or_skip("the contract suite on linux") else {
        return;
    };
    let report = assert_fails_nothing_and_names_every_skip(&target).await;
    assert_eq!(
        with_outcome(&report, Outcome::Skipped),
        planned_skips(&report)
    );
    let dir = target.state_dir().to_path_buf();
    drop(target);
    assert!(
        !dir.exists(),
        "the temporary state directory outlived the target"
    );
}
