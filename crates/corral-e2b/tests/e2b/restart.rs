//! A restart of the service over the same backend and state file: the
//! sandboxes it made are served again with their template, metadata, end
//! time and access token; one past its end time is destroyed at start;
//! a tampered state file is refused in one line and the service goes on.

use std::sync::Arc;

use corral_backend::{Backend, CreateRequest, Labels, now_ms};
use corral_backend_memory::MemoryBackend;
use corral_e2b::restore::Restored;
use corral_e2b::saved::{self, Saved};
use corral_e2b::{E2bConfig, E2bService};
use corral_wire::Token;
use serde_json::json;

use crate::harness::{KEY, serve_service};

fn config(file: &std::path::Path) -> E2bConfig {
    E2bConfig {
        state_file: Some(file.to_path_buf()),
        ..E2bConfig::default()
    }
}

fn key() -> Token {
    Token::new(KEY).unwrap()
}

#[tokio::test]
async fn a_restarted_service_serves_its_sandboxes_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e2b/state.json");
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());

    let first = E2bService::new(Arc::clone(&backend), key(), config(&file));
    assert_eq!(first.restore().await.unwrap(), Restored::default());
    let (a, accepting) = serve_service(first).await;
    let (id, token) = a
        .create(json!({"templateID": "base", "metadata": {"who": "a"}, "timeout": 300}))
        .await;
    let (other, other_token) = a.create(json!({"templateID": "base"})).await;
    let (killed, killed_token) = a.create(json!({"templateID": "base"})).await;
    let moved = a
        .api(
            "POST",
            &format!("/sandboxes/{id}/timeout"),
            json!({"timeout": 600}),
        )
        .await;
    assert_eq!(moved.status, 204);
    let before = a
        .api("GET", &format!("/sandboxes/{id}"), json!(null))
        .await
        .json();
    let gone = a
        .api("DELETE", &format!("/sandboxes/{killed}"), json!(null))
        .await;
    assert_eq!(gone.status, 204);
    accepting.abort();

    let second = E2bService::new(Arc::clone(&backend), key(), config(&file));
    let restored = second.restore().await.unwrap();
    assert_eq!(
        restored,
        Restored {
            served: 2,
            expired: 0,
            gone: 0
        }
    );
    let (b, _accepting) = serve_service(second).await;
    let listed = b
        .api("GET", "/v2/sandboxes?metadata=who%3Da", json!(null))
        .await
        .json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["sandboxID"], json!(id));
    assert_eq!(listed[0]["templateID"], "base");
    assert_eq!(listed[0]["metadata"], json!({"who": "a"}));
    let after = b
        .api("GET", &format!("/sandboxes/{id}"), json!(null))
        .await
        .json();
    for field in ["endAt", "startedAt", "envdAccessToken", "templateID"] {
        assert_eq!(after[field], before[field], "{field}");
    }
    let killed_again = b
        .api("GET", &format!("/sandboxes/{killed}"), json!(null))
        .await;
    assert_eq!(killed_again.status, 404, "a killed sandbox came back");

    // Its old access token is accepted, routed by its id or by itself.
    let a = b.rpc(&id, &token, "process.Process/List", json!({})).await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let by_token = b
        .send(
            "POST",
            "/process.Process/List",
            &[
                ("X-Access-Token", token.clone()),
                ("content-type", "application/json".into()),
            ],
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(by_token.status, 200);

    // Tokens that are not this sandbox's, after the restart.
    let other_key = Token::new("e2b_ffffffffffffffffffffffffffffffffffffffff").unwrap();
    let forged: [(&str, String); 5] = [
        ("another sandbox's", other_token.clone()),
        ("a killed sandbox's", killed_token),
        (
            "derived under another key",
            corral_e2b::access_token::derive(&other_key, &id),
        ),
        ("one digit off", {
            let mut t = token.clone();
            let last = if t.ends_with('0') { "1" } else { "0" };
            t.replace_range(t.len() - 1.., last);
            t
        }),
        ("empty", String::new()),
    ];
    for (what, bad) in forged {
        let a = b.rpc(&id, &bad, "process.Process/List", json!({})).await;
        assert_eq!(
            a.status,
            401,
            "{what}: {}",
            String::from_utf8_lossy(&a.body)
        );
        assert_eq!(a.json()["code"], "unauthenticated", "{what}");
    }
    let theirs = b
        .rpc(&other, &other_token, "process.Process/List", json!({}))
        .await;
    assert_eq!(theirs.status, 200);

    // The end time is enforced by the new service: moved to 1 s, the
    // sandbox is destroyed.
    let moved = b
        .api(
            "POST",
            &format!("/sandboxes/{id}/timeout"),
            json!({"timeout": 1}),
        )
        .await;
    assert_eq!(moved.status, 204);
    let mut status = 200;
    for _ in 0..300 {
        status = b
            .api("GET", &format!("/sandboxes/{id}"), json!(null))
            .await
            .status;
        if status == 404 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status, 404, "the sandbox outlived its end time");
    assert!(backend.connect(&id).await.is_err());
    let kept: Vec<String> = saved::load(&file)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(kept, vec![other]);
}

#[tokio::test]
async fn a_sandbox_past_its_end_time_is_destroyed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
    let mut labels = Labels::new();
    labels.insert("e2b", "base").unwrap();
    let made = backend
        .create(CreateRequest {
            labels,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let record = |id: &str, seq| Saved {
        id: id.to_string(),
        template: "base".into(),
        seq,
        started_at_ms: now_ms() - 2_000,
        end_at_ms: now_ms() - 1_000,
        metadata: Default::default(),
    };
    // A sandbox E2B's protocol did not make, named by a tampered file:
    // never destroyed, never adopted.
    let foreign = backend.create(CreateRequest::default()).await.unwrap();
    let records = vec![
        record(&made.id, 0),
        record("mem-0000000000000000", 1),
        record(&foreign.id, 2),
    ];
    saved::store(&file, records).unwrap();

    let service = E2bService::new(Arc::clone(&backend), key(), config(&file));
    let restored = service.restore().await.unwrap();
    assert_eq!(
        restored,
        Restored {
            served: 0,
            expired: 1,
            gone: 2
        }
    );
    assert!(
        backend.connect(&made.id).await.is_err(),
        "it was not destroyed"
    );
    assert!(
        backend.connect(&foreign.id).await.is_ok(),
        "another's sandbox was touched"
    );
    assert!(saved::load(&file).unwrap().is_empty());
}

#[tokio::test]
async fn a_tampered_state_file_is_refused_in_one_line_and_serve_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    let tampered: [&[u8]; 4] = [
        b"\x00\x01 not json at all",
        br#"{"version":1,"sandboxes":[{"id":"../x","template":"base","seq":0,"startedAtMs":0,"endAtMs":0,"metadata":{}}]}"#,
        br#"{"version":1,"sandboxes":[],"envdAccessToken":"stolen"}"#,
        br#"[1,2,3]"#,
    ];
    for bytes in tampered {
        std::fs::write(&file, bytes).unwrap();
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let service = E2bService::new(backend, key(), config(&file));
        let e = service.restore().await.unwrap_err().to_string();
        assert!(e.contains("is not valid"), "{e}");
        assert!(!e.contains('\n'), "{e:?} is more than one line");
        let (s, _accepting) = serve_service(service).await;
        let (id, _) = s.create(json!({"templateID": "base"})).await;
        let kept: Vec<String> = saved::load(&file)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(kept, vec![id], "the file was not rewritten");
    }
}
