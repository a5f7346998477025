//! What the background-process tests share: a fresh sandbox on a target,
//! and the cleanup that kills what a test left running before destroying it.

use corral_sdk::{CreateOptions, Sandbox};

use crate::sandbox_support::Target;

/// A fresh sandbox with default options on `target`'s backend.
pub async fn sandbox(target: &Target) -> Sandbox {
    Sandbox::create(target.backend.clone(), CreateOptions::default())
        .await
        .unwrap()
}

/// Kills whatever the test left running (on local a session outlives the
/// sandbox), checks nothing runs any more, then destroys the sandbox.
pub async fn cleanup(sb: &Sandbox) {
    sb.processes().kill_all().await.unwrap();
    assert!(
        sb.processes()
            .list()
            .await
            .unwrap()
            .iter()
            .all(|p| !p.state.is_running())
    );
    sb.destroy().await.unwrap();
}
