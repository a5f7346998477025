//! envd's services: a Start stream frame by frame, files up and down.

use serde_json::json;

use crate::harness::{Answer, Served, enveloped, frames, serve};

/// A GET of `path` naming no sandbox, carrying only the access `token`.
async fn by_token(s: &Served, token: &str, path: &str) -> Answer {
    let headers = [("X-Access-Token", token.to_string())];
    s.send("GET", path, &headers, Vec::new()).await
}

#[tokio::test]
async fn start_streams_start_data_end_and_the_end_of_stream() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let req = enveloped(
        &json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi; echo oops >&2; exit 3"]}}),
    );
    let a = s.stream(&id, &token, "process.Process/Start", req).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.headers["content-type"], "application/connect+json");
    let frames = frames(&a.body);
    assert!(
        frames[0].1["event"]["start"]["pid"].as_u64().is_some(),
        "{frames:?}"
    );
    let data: Vec<_> = frames
        .iter()
        .filter_map(|(_, f)| f["event"].get("data"))
        .collect();
    assert!(data.contains(&&json!({"stdout": "aGkK"})), "{data:?}");
    assert!(data.contains(&&json!({"stderr": "b29wcwo="})), "{data:?}");
    let (flags, last) = frames.last().unwrap();
    assert_eq!((*flags, last), (2, &json!({})));
    let end = &frames[frames.len() - 2].1["event"]["end"];
    assert_eq!(end["exitCode"], 3);
    assert_eq!(end["status"], "exit status 3");
}

#[tokio::test]
async fn files_go_up_raw_and_multipart_and_come_down() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let up = s
        .envd(
            &id,
            &token,
            "POST",
            "/files?path=notes/a.txt",
            "application/octet-stream",
            b"raw".to_vec(),
        )
        .await;
    assert_eq!(up.status, 200, "{}", String::from_utf8_lossy(&up.body));
    assert_eq!(
        up.json(),
        json!([{"name": "a.txt", "type": "file", "path": "/home/user/notes/a.txt"}])
    );
    let body = b"--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/b.txt\"\r\n\r\nmulti\r\n--xx--\r\n".to_vec();
    let up = s
        .envd(
            &id,
            &token,
            "POST",
            "/files",
            "multipart/form-data; boundary=xx",
            body,
        )
        .await;
    assert_eq!(up.status, 200, "{}", String::from_utf8_lossy(&up.body));
    let down = s.get_file(&id, &token, "%2Ftmp%2Fb.txt").await;
    assert_eq!(
        (down.status, down.body.as_slice()),
        (200, b"multi".as_slice())
    );
    let down = s.get_file(&id, &token, "notes/a.txt").await;
    assert_eq!(down.body, b"raw");
    let stat = s
        .filesystem(&id, &token, "Stat", json!({"path": "/tmp/nope"}))
        .await;
    assert_eq!(stat.status, 404);
    assert_eq!(stat.json()["code"], "not_found");
}

#[tokio::test]
async fn a_call_naming_no_sandbox_is_routed_by_its_access_token() {
    let s = serve().await;
    let (first, first_token) = s.create(json!({"templateID": "base"})).await;
    let (second, second_token) = s.create(json!({"templateID": "base"})).await;
    s.put(&first, &first_token, "/tmp/whose", b"first").await;
    s.put(&second, &second_token, "/tmp/whose", b"second").await;
    for (token, says) in [(&first_token, "first"), (&second_token, "second")] {
        let a = by_token(&s, token, "/files?path=/tmp/whose").await;
        assert_eq!((a.status, a.body.as_slice()), (200, says.as_bytes()));
        let health = by_token(&s, token, "/health").await;
        assert_eq!(health.status, 204);
    }
    // A killed sandbox's token routes nowhere.
    assert_eq!(
        s.api(
            "DELETE",
            &format!("/sandboxes/{first}"),
            serde_json::Value::Null
        )
        .await
        .status,
        204
    );
    let a = by_token(&s, &first_token, "/files?path=/tmp/whose").await;
    assert_eq!(a.status, 400, "{}", String::from_utf8_lossy(&a.body));
}
