//! `cleanup`: destroy is idempotent, a destroyed sandbox cannot be
//! attached to, and nothing this run labelled is left.

use std::sync::Arc;

use corral_backend::ErrorCode;
use corral_sdk::Sandbox;

use crate::failure::{Failure, ensure};
use crate::sdk::scope::{SdkScope, expect_code, step};

/// Destroys a sandbox twice, then requires `connect` (by id and by
/// locator) to fail with `not_found` and `list` by this run's label to be
/// empty: every earlier case cleaned up after itself.
pub(crate) async fn cleanup(scope: &mut SdkScope) -> Result<(), Failure> {
    let backend = Arc::clone(scope.backend());
    let sandbox = scope.sandbox().await?;
    let (id, locator) = (sandbox.id().to_string(), sandbox.locator());
    step("destroy", sandbox.destroy().await)?;
    step("destroy (again)", sandbox.destroy().await)?;
    expect_code(
        "connect by id after destroy",
        Sandbox::connect_id(Arc::clone(&backend), &id).await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "connect by locator after destroy",
        Sandbox::connect(Arc::clone(&backend), &locator).await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "run after destroy",
        sandbox.run("echo still here").await,
        ErrorCode::NotFound,
    )?;
    let labels = scope.run_labels();
    let left = step("list", Sandbox::list(backend, &labels).await)?;
    ensure(left.is_empty(), || {
        let ids: Vec<&str> = left.iter().map(|s| s.id()).collect();
        format!("sandboxes of this run left behind: {ids:?}")
    })
}
