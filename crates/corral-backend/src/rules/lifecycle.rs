//! Rules of find, list, connect and destroy.

use crate::backend::Backend;
use crate::error::ErrorCode;
use crate::key::SandboxKey;
use crate::sandbox::{CreateRequest, KeyMode};

use super::rule_labels;

/// A sandbox is found by key, listed by label, connected by id, and gone
/// after destroy; with `exact` keys a duplicate is refused as `conflict`.
pub async fn lifecycle_find_list_connect_destroy(backend: &dyn Backend) {
    let rule = "lifecycle_find_list_connect_destroy";
    let labels = rule_labels(rule);
    let key = SandboxKey::new(format!("rule-key-{}", crate::sandbox::now_ms())).unwrap();
    let req = CreateRequest {
        labels: labels.clone(),
        key: Some(key.clone()),
        ..CreateRequest::default()
    };
    let info = backend.create(req.clone()).await.unwrap();
    assert_eq!(info.key.as_deref(), Some(key.as_str()), "{rule}: key");
    assert_eq!(info.labels, labels, "{rule}: labels");
    let found = backend.find(&key).await.unwrap();
    assert_eq!(found.map(|f| f.id), Some(info.id.clone()), "{rule}: find");
    assert!(
        backend
            .find(&SandboxKey::new("no-such-key").unwrap())
            .await
            .unwrap()
            .is_none(),
        "{rule}"
    );
    if backend.key_mode() == KeyMode::Exact {
        let err = backend.create(req).await.expect_err("duplicate key");
        assert_eq!(
            err.code(),
            ErrorCode::Conflict,
            "{rule}: duplicate key: {err}"
        );
    }
    let listed = backend.list(&labels).await.unwrap();
    assert_eq!(listed.len(), 1, "{rule}: list by labels");
    assert_eq!(
        backend.connect(&info.id).await.unwrap().id,
        info.id,
        "{rule}"
    );
    backend.destroy(&info.id).await.unwrap();
    assert_eq!(
        backend.connect(&info.id).await.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: connect after destroy"
    );
    assert!(
        backend.find(&key).await.unwrap().is_none(),
        "{rule}: find after destroy"
    );
    assert!(
        backend.list(&labels).await.unwrap().is_empty(),
        "{rule}: list after destroy"
    );
}

/// Destroy is idempotent: again, and for an id that never existed.
pub async fn lifecycle_destroy_is_idempotent(backend: &dyn Backend) {
    let rule = "lifecycle_destroy_is_idempotent";
    let info = super::fresh(backend, rule).await;
    backend.destroy(&info.id).await.unwrap();
    backend
        .destroy(&info.id)
        .await
        .unwrap_or_else(|e| panic!("{rule}: second destroy: {e}"));
    backend
        .destroy("never-existed")
        .await
        .unwrap_or_else(|e| panic!("{rule}: destroy of an unknown id: {e}"));
}
