//! Rules of `create`: fail closed, refuse malformed requests, leave nothing behind.

use std::time::Duration;

use crate::backend::Backend;
use crate::error::ErrorCode;
use crate::sandbox::{CreateRequest, Destination, Labels, Network};

use super::rule_labels;

async fn count(backend: &dyn Backend, labels: &Labels) -> usize {
    backend.list(labels).await.expect("list").len()
}

/// SDK rule "Fail closed": a requested size, network, idle timeout or
/// timeout the backend cannot enforce fails with `unsupported`, and no
/// sandbox is left behind; one it declares it can enforce is accepted.
pub async fn create_fails_closed_when_it_cannot_enforce(backend: &dyn Backend) {
    let rule = "create_fails_closed_when_it_cannot_enforce";
    let e = backend.capabilities().enforces;
    let labels = rule_labels(rule);
    let base = || CreateRequest {
        labels: labels.clone(),
        ..CreateRequest::default()
    };
    let cases: Vec<(&str, bool, CreateRequest)> = vec![
        (
            "network: none",
            e.network_none,
            CreateRequest {
                network: Network::None,
                ..base()
            },
        ),
        (
            "network allowlist",
            e.network_allowlist,
            CreateRequest {
                network: Network::Allowlist {
                    destinations: vec![Destination::new("127.0.0.1", 9).unwrap()],
                },
                ..base()
            },
        ),
        ("size.cpus", e.cpu, {
            let mut r = base();
            r.size.cpus = Some(0.5);
            r
        }),
        ("size.memory_bytes", e.memory, {
            let mut r = base();
            r.size.memory_bytes = Some(256 << 20);
            r
        }),
        ("size.disk_bytes", e.disk, {
            let mut r = base();
            r.size.disk_bytes = Some(256 << 20);
            r
        }),
        ("limits.pids", e.pids, {
            let mut r = base();
            r.limits.pids = Some(64);
            r
        }),
        (
            "idle_timeout",
            e.idle_timeout,
            CreateRequest {
                idle_timeout: Some(Duration::from_secs(600)),
                ..base()
            },
        ),
        (
            "timeout",
            e.timeout,
            CreateRequest {
                timeout: Some(Duration::from_secs(600)),
                ..base()
            },
        ),
    ];
    for (what, enforced, req) in cases {
        let before = count(backend, &labels).await;
        match backend.create(req).await {
            Ok(info) if enforced => {
                backend.destroy(&info.id).await.expect("destroy");
            }
            Ok(info) => {
                let _ = backend.destroy(&info.id).await;
                panic!("{rule}: {what} is not enforced but create succeeded");
            }
            Err(err) if enforced => {
                panic!("{rule}: {what} is declared enforced but create failed: {err}")
            }
            Err(err) => {
                assert_eq!(err.code(), ErrorCode::Unsupported, "{rule}: {what}: {err}");
                assert_eq!(
                    count(backend, &labels).await,
                    before,
                    "{rule}: {what}: a refused create left a sandbox behind"
                );
            }
        }
    }
}

/// Malformed labels, env keys and keys are refused with `invalid_input`,
/// and nothing is created.
pub async fn create_refuses_malformed_requests(backend: &dyn Backend) {
    let rule = "create_refuses_malformed_requests";
    let labels = rule_labels(rule);
    // Malformed labels, a malformed environment and a malformed key cannot
    // reach a backend: they are refused where they are made, before any
    // request carries them.
    let made = labels.clone().with("bad key", "x");
    assert!(
        made.is_err(),
        "{rule}: label key with a space must be refused"
    );
    for (what, key, value) in [
        ("env key 1BAD", "1BAD", "x"),
        ("env value with NUL", "OK", "a\0b"),
    ] {
        let made = crate::Environment::new().with(key, value);
        assert!(made.is_err(), "{rule}: {what} must be refused");
    }
    let made = crate::SandboxKey::new(String::new());
    assert_eq!(
        made.map_err(|e| crate::BackendError::from(e).code())
            .unwrap_err(),
        ErrorCode::InvalidInput,
        "{rule}: empty key"
    );
    assert_eq!(
        count(backend, &labels).await,
        0,
        "{rule}: something was created"
    );
}
