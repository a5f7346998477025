//! `create-find-by-key` and `list-by-labels`.

use std::sync::Arc;

use corral_backend::CORRAL_LABEL;
use corral_sdk::Sandbox;

use crate::failure::{Failure, ensure};
use crate::sdk::scope::{SdkScope, step};

/// `get_or_create` twice with one key returns one sandbox; `find` by the
/// key returns it; an unknown key finds nothing; `connect` by locator
/// attaches to the same sandbox.
pub(crate) async fn create_find_by_key(scope: &mut SdkScope) -> Result<(), Failure> {
    let backend = Arc::clone(scope.backend());
    let key = scope.key("key");
    let first = step(
        "get_or_create (first)",
        Sandbox::get_or_create(Arc::clone(&backend), &key, scope.create_options()).await,
    )?;
    scope.own(&first);
    let second = step(
        "get_or_create (second, same key)",
        Sandbox::get_or_create(Arc::clone(&backend), &key, scope.create_options()).await,
    )?;
    scope.own(&second);
    ensure(first.id() == second.id(), || {
        format!(
            "get_or_create with one key gave two sandboxes: {} and {}",
            first.id(),
            second.id()
        )
    })?;
    let found = step("find", Sandbox::find(Arc::clone(&backend), &key).await)?;
    match found {
        Some(s) if s.id() == first.id() => {}
        Some(s) => {
            return Err(Failure::new(format_args!(
                "find {key:?}: returned {}, expected {}",
                s.id(),
                first.id()
            )));
        }
        None => {
            return Err(Failure::new(format_args!(
                "find {key:?}: found nothing, expected {}",
                first.id()
            )));
        }
    }
    let unknown = scope.key("never-created");
    let nothing = step(
        "find (unknown key)",
        Sandbox::find(Arc::clone(&backend), &unknown).await,
    )?;
    if let Some(s) = nothing {
        return Err(Failure::new(format_args!(
            "find {unknown:?}: returned {}, expected nothing",
            s.id()
        )));
    }
    let locator = first.locator();
    let attached = step(
        "connect (locator)",
        Sandbox::connect(Arc::clone(&backend), &locator).await,
    )?;
    ensure(attached.id() == first.id(), || {
        format!(
            "connect {locator:?}: attached to {}, expected {}",
            attached.id(),
            first.id()
        )
    })
}

/// `list` by this run's labels returns the sandbox, which carries the
/// `corral` label; `list` by a label nobody has returns none of it.
pub(crate) async fn list_by_labels(scope: &mut SdkScope) -> Result<(), Failure> {
    let backend = Arc::clone(scope.backend());
    let sandbox = scope.sandbox().await?;
    let mut labels = scope.create_options().labels;
    let listed = step("list", Sandbox::list(Arc::clone(&backend), &labels).await)?;
    let Some(mine) = listed.iter().find(|s| s.id() == sandbox.id()) else {
        let ids: Vec<&str> = listed.iter().map(|s| s.id()).collect();
        return Err(Failure::new(format_args!(
            "list by {labels:?}: {ids:?} does not include {}",
            sandbox.id()
        )));
    };
    ensure(mine.info().labels.contains_key(CORRAL_LABEL), || {
        format!(
            "list: {} lacks the {CORRAL_LABEL:?} label: {:?}",
            sandbox.id(),
            mine.info().labels
        )
    })?;
    ensure(listed.len() == 1, || {
        let ids: Vec<&str> = listed.iter().map(|s| s.id()).collect();
        format!(
            "list by {labels:?}: {ids:?}, expected only {}",
            sandbox.id()
        )
    })?;
    labels
        .insert("corral.conformance/absent", "no-sandbox-has-this")
        .map_err(|e| Failure::step("the unmatched label", e))?;
    let none = step(
        "list (unmatched label)",
        Sandbox::list(Arc::clone(&backend), &labels).await,
    )?;
    ensure(none.is_empty(), || {
        let ids: Vec<&str> = none.iter().map(|s| s.id()).collect();
        format!("list by a label nobody has: {ids:?}, expected none")
    })
}
