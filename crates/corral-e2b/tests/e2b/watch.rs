//! Watching directories: the polled trio and the `WatchDir` stream.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use crate::harness::{Served, enveloped, frames, serve};

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

async fn events(s: &Served, id: &str, token: &str, watcher: &str) -> Vec<(String, String)> {
    let a = s
        .rpc(
            id,
            token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": watcher}),
        )
        .await;
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

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

async fn create_watcher(s: &Served, id: &str, token: &str, body: Value) -> String {
    let a = s
        .rpc(id, token, "filesystem.Filesystem/CreateWatcher", body)
        .await;
    assert_eq!(a.status, 200, "{}", a.json());
    a.json()["watcherId"].as_str().unwrap().to_string()
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
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/Remove",
            json!({"path": "w/seed.txt"}),
        )
        .await;
    assert_eq!(removed.status, 200);
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("REMOVE", "seed.txt")])
    );
    // A rename is a remove and a create.
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/Move",
        json!({"source": "w/a.txt", "destination": "w/b.txt"}),
    )
    .await;
    assert_eq!(
        events(&s, &id, &token, &w).await,
        pairs(&[("REMOVE", "a.txt"), ("CREATE", "b.txt"), ("WRITE", "b.txt")])
    );
    let gone = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/RemoveWatcher",
            json!({"watcherId": w}),
        )
        .await;
    assert_eq!(gone.status, 200);
    let again = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
    assert_eq!(again.json()["code"], "not_found");
}

#[tokio::test]
async fn a_recursive_watcher_names_nested_paths_and_carries_entries() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/MakeDir",
        json!({"path": "/tmp/r"}),
    )
    .await;
    let w = create_watcher(
        &s,
        &id,
        &token,
        json!({"path": "/tmp/r", "recursive": true, "includeEntry": true}),
    )
    .await;
    s.put(&id, &token, "/tmp/r/n/f.txt", b"abc").await;
    let a = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
    let got = a.json()["events"].clone();
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
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/MakeDir",
        json!({"path": "/tmp/o"}),
    )
    .await;
    let w = create_watcher(&s, &id, &token, json!({"path": "/tmp/o"})).await;
    let body = many_files((0..1100).map(|i| format!("/tmp/o/f{i}")));
    let up = s
        .envd(
            &id,
            &token,
            "POST",
            "/files",
            "multipart/form-data; boundary=b",
            body,
        )
        .await;
    assert_eq!(up.status, 200);
    let a = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
    assert_eq!(a.json()["code"], "resource_exhausted", "{}", a.json());
    let says = a.json()["message"].as_str().unwrap().to_string();
    assert!(says.contains("lost events: more than 1024"), "{says}");
    let b = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
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
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/CreateWatcher",
            json!({"path": "/tmp"}),
        )
        .await;
    assert_eq!(refused.json()["code"], "resource_exhausted");
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .contains("16 watchers")
    );
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/RemoveWatcher",
        json!({"watcherId": ids[0]}),
    )
    .await;
    create_watcher(&s, &id, &token, json!({"path": "/tmp"})).await;
}

/// The raw stream of a `WatchDir` call, as it arrives.
async fn open_watch(
    s: &Served,
    id: &str,
    token: &str,
    path: &str,
    timeout_ms: Option<u64>,
) -> hyper::body::Incoming {
    let stream = TcpStream::connect(s.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .method("POST")
        .uri("/filesystem.Filesystem/WatchDir")
        .header("host", "localhost")
        .header("E2b-Sandbox-Id", id)
        .header("X-Access-Token", token)
        .header("content-type", "application/connect+json");
    if let Some(ms) = timeout_ms {
        req = req.header("Connect-Timeout-Ms", ms.to_string());
    }
    let body = enveloped(&json!({"path": path}));
    let res = sender
        .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/connect+json");
    res.into_body()
}

/// Reads frames until `until` says stop (or the stream ends), within 10 s.
async fn read_frames(
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

#[tokio::test]
async fn watch_dir_streams_start_changes_and_ends_at_its_deadline() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/MakeDir",
        json!({"path": "/tmp/s"}),
    )
    .await;
    let mut body = open_watch(&s, &id, &token, "/tmp/s", Some(1500)).await;
    let start = read_frames(&mut body, |f| !f.is_empty()).await;
    assert_eq!(start[0].1, json!({"start": {}}));
    s.put(&id, &token, "/tmp/s/new.txt", b"n").await;
    let all = read_frames(&mut body, |_| false).await;
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
    let (flags, end) = all.last().unwrap();
    assert_eq!(*flags, 2);
    assert_eq!(end["error"]["code"], "deadline_exceeded");
}

#[tokio::test]
async fn watch_dir_ends_with_its_sandbox_and_frees_its_place_when_the_client_leaves() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    // Sixteen streams whose clients go away free their places.
    for _ in 0..16 {
        let mut body = open_watch(&s, &id, &token, "/tmp", None).await;
        read_frames(&mut body, |f| !f.is_empty()).await;
        drop(body);
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    create_watcher(&s, &id, &token, json!({"path": "/tmp"})).await;
    let mut body = open_watch(&s, &id, &token, "/tmp", None).await;
    read_frames(&mut body, |f| !f.is_empty()).await;
    assert_eq!(
        s.api("DELETE", &format!("/sandboxes/{id}"), Value::Null)
            .await
            .status,
        204
    );
    let all = read_frames(&mut body, |_| false).await;
    let (flags, end) = all.last().unwrap();
    assert_eq!(*flags, 2);
    assert_eq!(end["error"]["code"], "not_found", "{end}");
}

#[tokio::test]
async fn a_watched_directory_that_goes_away_ends_the_watch_with_one_error() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "/tmp/g/f.txt", b"f").await;
    let w = create_watcher(&s, &id, &token, json!({"path": "/tmp/g"})).await;
    let mut body = open_watch(&s, &id, &token, "/tmp/g", None).await;
    read_frames(&mut body, |f| !f.is_empty()).await;
    s.rpc(
        &id,
        &token,
        "filesystem.Filesystem/Remove",
        json!({"path": "/tmp/g"}),
    )
    .await;
    let all = read_frames(&mut body, |_| false).await;
    let (flags, end) = all.last().unwrap();
    assert_eq!(
        (*flags, &end["error"]["code"]),
        (2, &json!("not_found")),
        "{end}"
    );
    let a = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
    assert_eq!(a.json()["code"], "not_found");
    assert!(
        a.json()["message"].as_str().unwrap().contains("/tmp/g"),
        "{}",
        a.json()
    );
    let b = s
        .rpc(
            &id,
            &token,
            "filesystem.Filesystem/GetWatcherEvents",
            json!({"watcherId": w}),
        )
        .await;
    assert!(
        b.json()["message"].as_str().unwrap().contains("watcher"),
        "{}",
        b.json()
    );
}
