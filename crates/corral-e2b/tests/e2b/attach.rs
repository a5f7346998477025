//! `process.Process/Connect`: attached to a running process by pid or by
//! tag, a stream sees what it does from then on and its end.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::harness::{Answer, Served, enveloped, frames, sandbox_headers, serve};

/// The content type of Connect streams.
const STREAM: &str = "application/connect+json";

/// A `Start` of `start` on sandbox `id`, answered in the background.
pub fn spawn_start(
    s: &Arc<Served>,
    id: &str,
    token: &str,
    start: Vec<u8>,
) -> tokio::task::JoinHandle<Answer> {
    let (s, id, token) = (Arc::clone(s), id.to_string(), token.to_string());
    tokio::spawn(async move { s.stream(&id, &token, "process.Process/Start", start).await })
}

/// Waits until `List` shows a process; its pid.
pub async fn listed_pid(s: &Served, id: &str, token: &str) -> u64 {
    for _ in 0..200 {
        let a = s.rpc(id, token, "process.Process/List", json!({})).await;
        if let Some(pid) = a.json()["processes"][0]["pid"].as_u64() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the process was never listed");
}

/// The stdout and the end event of a process stream.
fn stdout_and_end(body: &[u8]) -> (String, Value) {
    let all = frames(body);
    let (flags, last) = all.last().expect("no frame");
    assert_eq!((*flags, last), (2, &json!({})), "{all:?}");
    let mut out = Vec::new();
    for (_, f) in &all {
        if let Some(b) = f["event"]["data"]["stdout"].as_str() {
            out.extend(corral_contract::base64_decode(b).unwrap());
        }
    }
    let end = all[all.len() - 2].1["event"]["end"].clone();
    (String::from_utf8(out).unwrap(), end)
}

#[tokio::test]
async fn connect_by_pid_and_by_tag_streams_the_rest_and_the_end() {
    let s = Arc::new(serve().await);
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    for by_tag in [false, true] {
        let start = enveloped(&json!({
            "process": {"cmd": "/bin/bash", "args": ["-c", "echo early; sleep 1; echo late; exit 4"]},
            "tag": "job",
        }));
        let started = spawn_start(&s, &id, &token, start);
        let pid = listed_pid(&s, &id, &token).await;
        let selector = if by_tag {
            json!({"tag": "job"})
        } else {
            json!({"pid": pid})
        };
        let connect = enveloped(&json!({ "process": selector }));
        let attached = s
            .stream(&id, &token, "process.Process/Connect", connect)
            .await;
        assert_eq!(attached.status, 200);
        assert_eq!(attached.headers["content-type"], "application/connect+json");
        let all = frames(&attached.body);
        assert_eq!(
            all[0].1["event"]["start"]["pid"].as_u64(),
            Some(pid),
            "{all:?}"
        );
        let (out, end) = stdout_and_end(&attached.body);
        // Attached after `early`: nothing from before is replayed.
        assert_eq!(out, "late\n", "by tag: {by_tag}");
        assert_eq!(end["exitCode"], 4);
        // The starting stream saw everything.
        let (out, end) = stdout_and_end(&started.await.unwrap().body);
        assert_eq!(
            (out.as_str(), &end["exitCode"]),
            ("early\nlate\n", &json!(4))
        );
    }
}

#[tokio::test]
async fn a_connect_at_its_deadline_ends_and_the_process_goes_on() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let start = enveloped(&json!({"process": {"cmd": "/bin/bash", "args": ["-c", "sleep 30"]}}));
    // A start whose client goes away at once: the process goes on.
    let start = s.stream(&id, &token, "process.Process/Start", start);
    let _ = tokio::time::timeout(Duration::from_millis(300), start).await;
    let pid = listed_pid(&s, &id, &token).await;
    let a = s
        .send(
            "POST",
            "/process.Process/Connect",
            &sandbox_headers(
                &id,
                &token,
                &[("content-type", STREAM), ("Connect-Timeout-Ms", "200")],
            ),
            enveloped(&json!({"process": {"pid": pid}})),
        )
        .await;
    let all = frames(&a.body);
    assert_eq!(
        all.last().unwrap().1["error"]["code"],
        "deadline_exceeded",
        "{all:?}"
    );
    assert_eq!(listed_pid(&s, &id, &token).await, pid);
    let killed = s
        .rpc(
            &id,
            &token,
            "process.Process/SendSignal",
            json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}),
        )
        .await;
    assert_eq!(killed.status, 200);
}

#[tokio::test]
async fn an_attached_stream_that_falls_behind_ends_with_one_clear_error() {
    let s = Arc::new(serve().await);
    // A lifetime far past the work's (the default is 15 s, which a loaded
    // machine can spend moving 32 MiB through the simulated shell: the
    // sandbox's end would then kill the process mid-stream).
    let (id, token) = s
        .create(json!({"templateID": "base", "timeout": 600}))
        .await;
    // Far more than the attached stream holds, and the socket's buffers.
    s.put(&id, &token, "/tmp/big", &vec![b'x'; 32 * 1024 * 1024])
        .await;
    let start = enveloped(&json!({
        "process": {"cmd": "/bin/bash", "args": ["-c", "sleep 0.5; cat /tmp/big"]},
    }));
    let started = spawn_start(&s, &id, &token, start);
    let pid = listed_pid(&s, &id, &token).await;
    // Attached, and not read until the process has ended.
    let headers = sandbox_headers(&id, &token, &[("content-type", STREAM)]);
    let connect = enveloped(&json!({"process": {"pid": pid}}));
    let res = s
        .open("POST", "/process.Process/Connect", &headers, connect)
        .await;
    let (_, end) = stdout_and_end(&started.await.unwrap().body);
    assert_eq!(end["exitCode"], 0);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let all = frames(&body);
    let error = &all.last().unwrap().1["error"];
    assert_eq!(error["code"], "resource_exhausted", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("fell") && message.contains("behind"),
        "{message}"
    );
}
