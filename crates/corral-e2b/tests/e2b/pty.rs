//! `process.Process` on a terminal: a `Start` with a `pty` on the memory
//! backend's terminals, `SendInput`'s `input.pty`, `Update`'s resize, and
//! every refusal around them (the provider contract: "`pause`, `resume`,
//! `snapshot`, `terminal` | Optional. Must match `capabilities`." — a
//! backend without terminals refuses a pty as `unimplemented`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::attach::{listed_pid, spawn_start};
use crate::harness::{Served, enveloped, frames, sandbox_headers, serve, serve_backend};
use crate::tables::lone_error;
use crate::watch::read_frames;

/// What a pty stream showed (its `pty` data, decoded) and its end event;
/// it carries no stdout or stderr.
fn shown_and_end(body: &[u8]) -> (String, Value) {
    let all = frames(body);
    let (flags, last) = all.last().expect("no frame");
    assert_eq!((*flags, last), (2, &json!({})), "{all:?}");
    let mut shown = Vec::new();
    for (_, f) in &all {
        let data = &f["event"]["data"];
        assert!(data["stdout"].is_null() && data["stderr"].is_null(), "{f}");
        if let Some(b) = data["pty"].as_str() {
            shown.extend(corral_contract::base64_decode(b).unwrap());
        }
    }
    let end = all[all.len() - 2].1["event"]["end"].clone();
    (String::from_utf8(shown).unwrap(), end)
}

/// A pty `Start` of `script` at `cols`x`rows`.
fn pty_start(script: &str, cols: u32, rows: u32) -> Vec<u8> {
    enveloped(&json!({
        "process": {"cmd": "/bin/bash", "args": ["-c", script], "envs": {"TERM": "xterm-256color"}},
        "pty": {"size": {"cols": cols, "rows": rows}},
    }))
}

#[tokio::test]
async fn a_pty_process_takes_keystrokes_resizes_and_ends_with_its_code() {
    let s = Arc::new(serve().await);
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let script = "echo size-$COLUMNS-$LINES; read line; echo got-$line; exit 3";
    let started = spawn_start(&s, &id, &token, pty_start(script, 100, 30));
    let pid = listed_pid(&s, &id, &token).await;

    let resize = json!({"process": {"pid": pid}, "pty": {"size": {"cols": 120, "rows": 40}}});
    let a = s.rpc(&id, &token, "process.Process/Update", resize).await;
    assert_eq!((a.status, a.json()), (200, json!({})));

    let keys = corral_contract::base64_encode(b"abc\n");
    let input = json!({"process": {"pid": pid}, "input": {"pty": keys}});
    let a = s.rpc(&id, &token, "process.Process/SendInput", input).await;
    assert_eq!((a.status, a.json()), (200, json!({})));

    let answer = started.await.unwrap();
    assert_eq!(answer.status, 200);
    let (shown, end) = shown_and_end(&answer.body);
    assert!(shown.contains("size-100-30"), "{shown:?}");
    assert!(shown.contains("got-abc"), "{shown:?}");
    assert_eq!(end["exitCode"], 3, "{end}");
}

#[tokio::test]
async fn a_pty_process_is_killed_and_reattached_as_any_other() {
    let s = Arc::new(serve().await);
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let started = spawn_start(&s, &id, &token, pty_start("read line; echo $line", 80, 24));
    let pid = listed_pid(&s, &id, &token).await;
    let connect = enveloped(&json!({"process": {"pid": pid}}));
    let headers = sandbox_headers(&id, &token, &[("content-type", "application/connect+json")]);
    let res = s
        .open("POST", "/process.Process/Connect", &headers, connect)
        .await;
    let mut body = res.into_body();
    // Attached once its start event is out: a line typed now is shown on
    // the attached stream as on the starting one.
    let first = read_frames(&mut body, |f| !f.is_empty()).await;
    assert_eq!(first[0].1["event"]["start"]["pid"].as_u64(), Some(pid));
    let keys = corral_contract::base64_encode(b"seen\n");
    let input = json!({"process": {"pid": pid}, "input": {"pty": keys}});
    let a = s.rpc(&id, &token, "process.Process/SendInput", input).await;
    assert_eq!(a.status, 200);
    let rest = read_frames(&mut body, |f| {
        f.last().is_some_and(|(flags, _)| *flags == 2)
    })
    .await;
    let attached: String = rest
        .iter()
        .filter_map(|(_, f)| f["event"]["data"]["pty"].as_str())
        .map(|b| String::from_utf8(corral_contract::base64_decode(b).unwrap()).unwrap())
        .collect();
    assert!(attached.contains("seen"), "{attached:?}");
    let ends: Vec<_> = rest
        .iter()
        .filter(|(_, f)| !f["event"]["end"].is_null())
        .collect();
    assert_eq!(ends.len(), 1, "{rest:?}");
    let (owned, end) = shown_and_end(&started.await.unwrap().body);
    assert!(owned.contains("seen"), "{owned:?}");
    assert_eq!(end["exitCode"], 0, "{end}");

    let started = spawn_start(&s, &id, &token, pty_start("sleep 60", 80, 24));
    let pid = listed_pid(&s, &id, &token).await;
    let kill = json!({"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"});
    let a = s.rpc(&id, &token, "process.Process/SendSignal", kill).await;
    assert_eq!(a.status, 200);
    let (_, end) = shown_and_end(&started.await.unwrap().body);
    assert_eq!(end["exited"], false, "{end}");
}

/// A refused unary call: procedure, body, status, Connect code, what the
/// message says.
type UnaryCase<'a> = (&'a str, Value, u16, &'a str, &'a str);

#[tokio::test]
async fn hostile_pty_calls_are_refused_in_one_line() {
    let s = Arc::new(serve().await);
    let (id, token) = s.create(json!({"templateID": "base"})).await;

    // Sizes a Start may not open a terminal at.
    let sizes: [(Value, &str); 6] = [
        (json!({"size": {"cols": 0, "rows": 24}}), "pty.size.cols: 0"),
        (json!({"size": {"rows": 24}}), "pty.size.cols: 0"),
        (
            json!({"size": {"cols": 65536, "rows": 24}}),
            "pty.size.cols: 65536",
        ),
        (
            json!({"size": {"cols": 80, "rows": -1}}),
            "pty.size.rows: -1",
        ),
        (json!({"size": {"cols": 80, "rows": 0}}), "pty.size.rows: 0"),
        (json!({}), "pty.size: is missing"),
    ];
    for (pty, says) in sizes {
        let start = enveloped(&json!({"process": {"cmd": "/bin/bash"}, "pty": pty}));
        let a = s.stream(&id, &token, "process.Process/Start", start).await;
        let error = lone_error(says, &a.body);
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(error["code"], "invalid_argument", "{message}");
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
    let listed = s
        .rpc(&id, &token, "process.Process/List", json!({}))
        .await
        .json();
    assert_eq!(listed["processes"], json!([]), "a refused start left one");

    // A process on pipes, and one on a terminal.
    let piped = enveloped(&json!({
        "process": {"cmd": "/bin/bash", "args": ["-c", "sleep 60"]}, "tag": "piped",
    }));
    let _piped = spawn_start(&s, &id, &token, piped);
    let piped = listed_pid(&s, &id, &token).await;
    let _term = spawn_start(&s, &id, &token, pty_start("sleep 60", 80, 24));
    let term = loop {
        let listed = s
            .rpc(&id, &token, "process.Process/List", json!({}))
            .await
            .json();
        let pids: Vec<u64> = listed["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["pid"].as_u64())
            .filter(|p| *p != piped)
            .collect();
        if let Some(pid) = pids.first() {
            break *pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let size = json!({"size": {"cols": 80, "rows": 24}});
    let keys = corral_contract::base64_encode(b"x");
    let cases: Vec<UnaryCase> = vec![
        (
            "Update",
            json!({"process": {"pid": 4_000_000}, "pty": size}),
            404,
            "not_found",
            "process pid 4000000 not found",
        ),
        (
            "Update",
            json!({"process": {"pid": piped}, "pty": size}),
            400,
            "invalid_argument",
            "runs on no terminal: Update",
        ),
        (
            "Update",
            json!({"process": {"pid": term}}),
            400,
            "invalid_argument",
            "pty: is missing",
        ),
        (
            "Update",
            json!({"process": {"pid": term}, "pty": {"size": {"cols": 65536, "rows": 1}}}),
            400,
            "invalid_argument",
            "pty.size.cols: 65536 is not from 1 to 65535",
        ),
        (
            "Update",
            json!({"process": {"pid": term}, "pty": {"size": {"cols": -3, "rows": 1}}}),
            400,
            "invalid_argument",
            "pty.size.cols: -3",
        ),
        (
            "SendInput",
            json!({"process": {"pid": piped}, "input": {"pty": keys}}),
            400,
            "invalid_argument",
            "runs on no terminal: SendInput's input.pty",
        ),
        (
            "SendInput",
            json!({"process": {"pid": term}, "input": {"stdin": keys}}),
            400,
            "invalid_argument",
            "runs on a terminal: SendInput's input.stdin",
        ),
        (
            "SendInput",
            json!({"process": {"pid": term}, "input": {"pty": "not base64!"}}),
            400,
            "invalid_argument",
            "input.pty: is not base64",
        ),
        (
            "CloseStdin",
            json!({"process": {"pid": term}}),
            400,
            "invalid_argument",
            "runs on a terminal: CloseStdin",
        ),
    ];
    for (procedure, body, status, code, says) in cases {
        let path = format!("process.Process/{procedure}");
        let a = s.rpc(&id, &token, &path, body.clone()).await;
        let error = a.json();
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(a.status, status, "{procedure} {body}: {message}");
        assert_eq!(error["code"], code, "{procedure} {body}: {message}");
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
}

/// A pty on a backend without terminals (local) is `unimplemented`, for
/// `Start` and `Update` alike; nothing is started.
#[tokio::test]
async fn a_backend_without_terminals_refuses_a_pty() {
    let dir = tempfile::tempdir().unwrap();
    let backend = corral_backend_local::LocalBackend::open(dir.path()).unwrap();
    let s: Served = serve_backend(Arc::new(backend)).await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let a = s
        .stream(
            &id,
            &token,
            "process.Process/Start",
            pty_start("true", 80, 24),
        )
        .await;
    let error = lone_error("Start", &a.body);
    assert_eq!(error["code"], "unimplemented", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("a pty (terminals) on the local backend is not served"),
        "{error}"
    );
    let update = json!({"process": {"pid": 1}, "pty": {"size": {"cols": 80, "rows": 24}}});
    let a = s.rpc(&id, &token, "process.Process/Update", update).await;
    assert_eq!(
        (a.status, &a.json()["code"]),
        (501, &json!("unimplemented"))
    );
    let listed = s
        .rpc(&id, &token, "process.Process/List", json!({}))
        .await
        .json();
    assert_eq!(listed["processes"], json!([]));
}
