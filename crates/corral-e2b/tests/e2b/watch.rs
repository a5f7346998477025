//! Watching directories: the polled trio and the `WatchDir` stream.

use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::harness::{Answer, Served, enveloped, frames, sandbox_headers, serve};

/// A multipart body writing each of `paths` empty.
pub fn many_files(paths: impl Iterator<Item = String>) -> Vec<u8> {
    let mut body = Vec::new();
    for p in paths {
        body.extend_from_slice(
            format!(
                "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{p}\"\r\n\r\n\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(b"--b--\r\n");
    body
}

/// One `GetWatcherEvents` call on watcher `watcher`, as answered.
async fn poll(s: &Served, id: &str, token: &str, watcher: &str) -> Answer {
    let body = json!({"watcherId": watcher});
    s.filesystem(id, token, "GetWatcherEvents", body).await
}

/// The events a poll of `watcher` returns: (type without its prefix, name).
async fn events(s: &Served, id: &str, token: &str, watcher: &str) -> Vec<(String, String)> {
    let a = poll(s, id, token, watcher).await;
    assert_eq!(a.status, 200, "{}", a.json());
    a.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("EVENT_TYPE_")
                    .to_string(),
                e["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Owned copies of (type, name) pairs, to compare with `events`.
fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// A new polled watcher made from `body`: its id.
async fn create_watcher(s: &Served, id: &str, token: &str, body: Value) -> String {
    let a = s.filesystem(id, token, "CreateWatcher", body).await;
    assert_eq!(a.status, 200, "{}", a.json());
    a.json()["watcherId"].as_str().unwrap().to_string()
}

/// Makes the directory `path`.
async fn make_dir(s: &Served, id: &str, token: &str, path: &str) {
    s.filesystem(id, token, "MakeDir", json!({"path": path}))
        .await;
}

#[tokio::test]
async fn a_polled_watcher_reports_creates_writes_and_removes_of_children() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "w/seed.txt", b"seed").await;
    let w = create_watcher(&s, &id, &token, json!({"path": "w"})).await;
    assert!(events(&s, &id, &token, &w).await.is_empty());
    s.put(&id, &token, "w/a.txt", b"hello").await;
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("CREATE", "a.txt"), ("WRITE", "a.txt")])
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    s.put(&id, &token, "w/a.txt", b"world").await;
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("WRITE", "a.txt")])
    );
    // Not recursive: what happens inside a subdirectory is not seen.
    s.put(&id, &token, "w/sub/deep.txt", b"x").await;
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("CREATE", "sub")])
    );
    let removed = s
        .filesystem(&id, &token, "Remove", json!({"path": "w/seed.txt"}))
        .await;
    assert_eq!(removed.status, 200);
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("REMOVE", "seed.txt")])
    );
    // A rename is a remove and a create.
    let rename = json!({"source": "w/a.txt", "destination": "w/b.txt"});
    s.filesystem(&id, &token, "Move", rename).await;
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("REMOVE", "a.txt"), ("CREATE", "b.txt"), ("WRITE", "b.txt")])
    );
    let gone = s
        .filesystem(&id, &token, "RemoveWatcher", json!({"watcherId": w}))
        .await;
    assert_eq!(gone.status, 200);
    let again = poll(&s, &id, &token, &w).await;
    assert_eq!(again.json()["code"], "not_found");
}

#[tokio::test]
async fn a_recursive_watcher_names_nested_paths_and_carries_entries() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    make_dir(&s, &id, &token, "/tmp/r").await;
    let w = create_watcher(
        &s,
        &id,
        &token,
        json!({"path": "/tmp/r", "recursive": true, "includeEntry": true}),
    )
    .await;
    s.put(&id, &token, "/tmp/r/n/f.txt", b"abc").await;
    let got = poll(&s, &id, &token, &w).await.json()["events"].clone();
    assert_eq!(got[0]["name"], "n");
    assert_eq!(got[0]["type"], "EVENT_TYPE_CREATE");
    assert_eq!(got[1]["name"], "n/f.txt");
    assert_eq!(got[1]["entry"]["path"], "/tmp/r/n/f.txt");
    assert_eq!(got[1]["entry"]["size"], "3");
    assert_eq!(got[2]["type"], "EVENT_TYPE_WRITE");
}

#[tokio::test]
async fn a_watcher_that_is_never_read_overflows_into_one_clear_error() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    make_dir(&s, &id, &token, "/tmp/o").await;
    let w = create_watcher(&s, &id, &token, json!({"path": "/tmp/o"})).await;
    let body = many_files((0..1100).map(|i| format!("/tmp/o/f{i}")));
    let multipart = "multipart/form-data; boundary=b";
    let up = s.envd(&id, &token, "POST", "/files", multipart, body).await;
    assert_eq!(up.status, 200);
    let a = poll(&s, &id, &token, &w).await;
    assert_eq!(a.json()["code"], "resource_exhausted", "{}", a.json());
    let says = a.json()["message"].as_str().unwrap().to_string();
    assert!(says.contains("lost events: more than 1024"), "{says}");
    let b = poll(&s, &id, &token, &w).await;
    assert_eq!(b.json()["code"], "not_found");
}

#[tokio::test]
async fn a_sandbox_holds_a_bounded_number_of_watchers() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let mut ids = Vec::new();
    for _ in 0..16 {
        ids.push(create_watcher(&s, &id, &token, json!({"path": "/tmp"})).await);
    }
    let refused = s
        .filesystem(&id, &token, "CreateWatcher", json!({"path": "/tmp"}))
        .await;
    assert_eq!(refused.json()["code"], "resource_exhausted");
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .contains("16 watchers")
    );
    let first = json!({"watcherId": ids[0]});
    s.filesystem(&id, &token, "RemoveWatcher", first).await;
    create_watcher(&s, &id, &token, json!({"path": "/tmp"})).await;
}

/// A `WatchDir` stream of `path`, read past its first frame, its start.
async fn started_watch(
    s: &Served,
    id: &str,
    token: &str,
    path: &str,
    timeout_ms: Option<u64>,
) -> hyper::body::Incoming {
    let mut headers = sandbox_headers(id, token, &[("content-type", "application/connect+json")]);
    if let Some(ms) = timeout_ms {
        headers.push(("Connect-Timeout-Ms", ms.to_string()));
    }
    let body = enveloped(&json!({"path": path}));
    let res = s
        .open("POST", "/filesystem.Filesystem/WatchDir", &headers, body)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/connect+json");
    let mut body = res.into_body();
    let start = read_frames(&mut body, |f| !f.is_empty()).await;
    assert_eq!(start[0].1, json!({"start": {}}));
    body
}

/// Reads frames until `until` says stop (or the stream ends), within 10 s.
pub async fn read_frames(
    body: &mut hyper::body::Incoming,
    until: impl Fn(&[(u8, Value)]) -> bool,
) -> Vec<(u8, Value)> {
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let complete = whole_frames(&bytes);
        if until(&frames(&bytes[..complete])) {
            return frames(&bytes[..complete]);
        }
        let next = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("the stream stalled");
        match next {
            Some(Ok(f)) => {
                if let Ok(data) = f.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            _ => return frames(&bytes[..whole_frames(&bytes)]),
        }
    }
}

/// How many of `bytes` make whole frames.
fn whole_frames(bytes: &[u8]) -> usize {
    let mut at = 0;
    while bytes.len() >= at + 5 {
        let len = u32::from_be_bytes([bytes[at + 1], bytes[at + 2], bytes[at + 3], bytes[at + 4]])
            as usize;
        if bytes.len() < at + 5 + len {
            break;
        }
        at += 5 + len;
    }
    at
}

/// The rest of a stream, to its end; the end-of-stream frame's JSON too.
async fn read_to_end(body: &mut hyper::body::Incoming) -> (Vec<(u8, Value)>, Value) {
    let all = read_frames(body, |_| false).await;
    let (flags, end) = all.last().unwrap().clone();
    assert_eq!(flags, 2, "not an end-of-stream frame: {end}");
    (all, end)
}

#[tokio::test]
async fn watch_dir_streams_start_changes_and_ends_at_its_deadline() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    make_dir(&s, &id, &token, "/tmp/s").await;
    let mut body = started_watch(&s, &id, &token, "/tmp/s", Some(1500)).await;
    s.put(&id, &token, "/tmp/s/new.txt", b"n").await;
    let (all, end) = read_to_end(&mut body).await;
    let changes: Vec<&Value> = all
        .iter()
        .filter_map(|(_, f)| f.get("filesystem"))
        .collect();
    assert_eq!(
        changes,
        vec![
            &json!({"name": "new.txt", "type": "EVENT_TYPE_CREATE"}),
            &json!({"name": "new.txt", "type": "EVENT_TYPE_WRITE"}),
        ]
    );
    assert_eq!(end["error"]["code"], "deadline_exceeded");
}

#[tokio::test]
async fn watch_dir_ends_with_its_sandbox_and_frees_its_place_when_the_client_leaves() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    // Sixteen streams whose clients go away free their places.
    for _ in 0..16 {
        drop(started_watch(&s, &id, &token, "/tmp", None).await);
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    create_watcher(&s, &id, &token, json!({"path": "/tmp"})).await;
    let mut body = started_watch(&s, &id, &token, "/tmp", None).await;
    assert_eq!(
        s.api("DELETE", &format!("/sandboxes/{id}"), Value::Null)
            .await
            .status,
        204
    );
    let (_, end) = read_to_end(&mut body).await;
    assert_eq!(end["error"]["code"], "not_found", "{end}");
}

#[tokio::test]
async fn a_watched_directory_that_goes_away_ends_the_watch_with_one_error() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "/tmp/g/f.txt", b"f").await;
    let w = create_watcher(&s, &id, &token, json!({"path": "/tmp/g"})).await;
    let mut body = started_watch(&s, &id, &token, "/tmp/g", None).await;
    s.filesystem(&id, &token, "Remove", json!({"path": "/tmp/g"}))
        .await;
    let (_, end) = read_to_end(&mut body).await;
    assert_eq!(end["error"]["code"], "not_found", "{end}");
    let a = poll(&s, &id, &token, &w).await;
    assert_eq!(a.json()["code"], "not_found");
    assert!(
        a.json()["message"].as_str().unwrap().contains("/tmp/g"),
        "{}",
        a.json()
    );
    let b = poll(&s, &id, &token, &w).await;
    assert!(
        b.json()["message"].as_str().unwrap().contains("watcher"),
        "{}",
        b.json()
    );
}
