//! The error tables and hostile inputs, as tables.

use corral_backend::ErrorCode;
use corral_e2b::{ConnectCode, connect_code_of, http_status_of};
use serde_json::json;

use crate::harness::{KEY, enveloped, frames, serve};

/// method, path, headers, body, status, what the message says.
type Case<'a> = (
    &'a str,
    &'a str,
    Vec<(&'a str, String)>,
    Vec<u8>,
    u16,
    &'a str,
);

#[test]
fn every_backend_code_has_one_status_and_one_connect_code() {
    let table = [
        (ErrorCode::Auth, 502, ConnectCode::PermissionDenied),
        (ErrorCode::NotFound, 404, ConnectCode::NotFound),
        (ErrorCode::Quota, 429, ConnectCode::ResourceExhausted),
        (ErrorCode::Unavailable, 503, ConnectCode::Unavailable),
        (ErrorCode::Unsupported, 400, ConnectCode::Unimplemented),
        (ErrorCode::Provider, 500, ConnectCode::Internal),
        (ErrorCode::Timeout, 504, ConnectCode::DeadlineExceeded),
        (ErrorCode::Aborted, 500, ConnectCode::Aborted),
        (ErrorCode::InvalidInput, 400, ConnectCode::InvalidArgument),
        (ErrorCode::Conflict, 409, ConnectCode::FailedPrecondition),
        (ErrorCode::Io, 500, ConnectCode::Internal),
    ];
    for (code, status, connect) in table {
        assert_eq!(http_status_of(code).as_u16(), status, "{code}");
        assert_eq!(connect_code_of(code), connect, "{code}");
    }
    assert_eq!(ConnectCode::NotFound.http_status().as_u16(), 404);
    assert_eq!(ConnectCode::NotFound.as_str(), "not_found");
}

#[tokio::test]
async fn hostile_inputs_get_one_clear_line() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let (_other, other_token) = s.create(json!({"templateID": "base"})).await;
    let key = ("X-API-KEY", KEY.to_string());
    let envd = vec![
        ("E2b-Sandbox-Id", id.clone()),
        ("X-Access-Token", token.clone()),
        ("content-type", "application/json".to_string()),
    ];
    // A directory holding a symlink, which the file primitives cannot make.
    let ln = s
        .envd(
            &id,
            &token,
            "POST",
            "/process.Process/Start",
            "application/connect+json",
            enveloped(&json!({"process": {"cmd": "/bin/bash", "args": ["-c", "mkdir -p /tmp/ln && ln -s /tmp /tmp/ln/link"]}})),
        )
        .await;
    assert!(frames(&ln.body).len() >= 2, "{:?}", frames(&ln.body));
    // A directory too large to watch.
    let big = crate::watch::many_files((0..5001).map(|i| format!("/tmp/big/f{i}")));
    let up = s
        .envd(
            &id,
            &token,
            "POST",
            "/files",
            "multipart/form-data; boundary=b",
            big,
        )
        .await;
    assert_eq!(up.status, 200);
    let mut gzipped = envd.clone();
    gzipped.push(("content-encoding", "gzip".to_string()));
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/v2/sandboxes",
            vec![key.clone()],
            b"{not json".to_vec(),
            400,
            "the body of POST /sandboxes is not valid",
        ),
        (
            "POST",
            "/v2/sandboxes",
            vec![key.clone()],
            vec![b' '; 2 * 1024 * 1024],
            413,
            "the body is larger than",
        ),
        (
            "POST",
            "/v2/sandboxes",
            vec![key.clone()],
            br#"{"templateID":"nope"}"#.to_vec(),
            404,
            "template \"nope\" not found",
        ),
        (
            "POST",
            "/v2/sandboxes",
            vec![key.clone()],
            br#"{"templateID":"base","metadata":{"a b":"x"}}"#.to_vec(),
            400,
            "metadata.a b",
        ),
        (
            "POST",
            "/v2/sandboxes",
            vec![key.clone()],
            br#"{"templateID":"base","envVars":{"1A":"x"}}"#.to_vec(),
            400,
            "envVars",
        ),
        (
            "GET",
            "/templates",
            vec![key.clone()],
            Vec::new(),
            501,
            "is not served by corral",
        ),
        (
            "GET",
            "/files?path=/tmp/x",
            vec![
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", "wrong-token-0123456789".into()),
            ],
            Vec::new(),
            401,
            "X-Access-Token is missing or wrong",
        ),
        (
            "GET",
            "/files?path=/tmp/x",
            vec![],
            Vec::new(),
            400,
            "no sandbox named",
        ),
        (
            "POST",
            "/process.Process/SendInput",
            vec![
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", token.clone()),
            ],
            br#"{"process":{"pid":1},"input":{"stdin":"%%%"}}"#.to_vec(),
            404,
            "process pid 1 not found",
        ),
        (
            "GET",
            "/files?path=a%00b",
            vec![
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", token.clone()),
            ],
            Vec::new(),
            400,
            "path",
        ),
        (
            "POST",
            "/filesystem.Filesystem/Move",
            envd.clone(),
            br#"{"source":"/tmp/m","destination":"/tmp/m/inside"}"#.to_vec(),
            400,
            "cannot move /tmp/m into itself (/tmp/m/inside)",
        ),
        (
            "POST",
            "/filesystem.Filesystem/Move",
            envd.clone(),
            br#"{"source":"/","destination":"/tmp/root"}"#.to_vec(),
            400,
            "cannot move / into itself",
        ),
        (
            "POST",
            "/filesystem.Filesystem/Stat",
            envd.clone(),
            br#"{"path":"no/such/relative"}"#.to_vec(),
            404,
            "/home/user/no/such/relative",
        ),
        (
            "POST",
            "/files?path=/tmp/bomb",
            gzipped.clone(),
            crate::gzip::bomb(65),
            413,
            "the gzip body inflates to more than 67108864 bytes",
        ),
        (
            "POST",
            "/files?path=/tmp/notgz",
            gzipped.clone(),
            b"plain bytes, not gzip".to_vec(),
            400,
            "the body is not valid gzip",
        ),
        (
            "POST",
            "/files?path=/tmp/br",
            {
                let mut h = envd.clone();
                h.push(("content-encoding", "br".to_string()));
                h
            },
            b"x".to_vec(),
            501,
            "Content-Encoding \"br\" on uploads (gzip is) is not served",
        ),
        (
            "POST",
            "/filesystem.Filesystem/GetWatcherEvents",
            envd.clone(),
            br#"{"watcherId":"w-none"}"#.to_vec(),
            404,
            "watcher \"w-none\" not found",
        ),
        (
            "POST",
            "/filesystem.Filesystem/RemoveWatcher",
            envd.clone(),
            br#"{"watcherId":""}"#.to_vec(),
            404,
            "watcher \"\" not found",
        ),
        (
            "POST",
            "/filesystem.Filesystem/CreateWatcher",
            envd.clone(),
            br#"{"path":"/tmp/big/f0"}"#.to_vec(),
            400,
            "/tmp/big/f0 is not a directory",
        ),
        (
            "POST",
            "/filesystem.Filesystem/CreateWatcher",
            envd.clone(),
            br#"{"path":"never-made"}"#.to_vec(),
            404,
            "/home/user/never-made",
        ),
        (
            "POST",
            "/filesystem.Filesystem/CreateWatcher",
            envd.clone(),
            br#"{"path":"/tmp/big"}"#.to_vec(),
            429,
            "/tmp/big holds more than 5000 entries",
        ),
        (
            "POST",
            "/filesystem.Filesystem/CreateWatcher",
            envd.clone(),
            br#"{"path":"/tmp/a\u0000b"}"#.to_vec(),
            400,
            "path",
        ),
        (
            "POST",
            "/filesystem.Filesystem/Move",
            envd.clone(),
            br#"{"source":"/tmp/ln","destination":"/tmp/ln-moved"}"#.to_vec(),
            501,
            "Move of a directory holding a symlink or a special file (/tmp/ln/link)",
        ),
        // Routed by the access token alone: an empty one routes nowhere.
        (
            "POST",
            "/process.Process/List",
            vec![("X-Access-Token", String::new())],
            b"{}".to_vec(),
            400,
            "no sandbox named",
        ),
        // A token no sandbox has routes nowhere either.
        (
            "POST",
            "/process.Process/List",
            vec![("X-Access-Token", "f".repeat(32))],
            b"{}".to_vec(),
            400,
            "no sandbox named",
        ),
        // Another sandbox's token, on a call naming this one, is refused.
        (
            "POST",
            "/process.Process/List",
            vec![
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", other_token.clone()),
            ],
            b"{}".to_vec(),
            401,
            "X-Access-Token is missing or wrong",
        ),
        (
            "GET",
            "/files?path=/tmp/a",
            vec![
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", other_token.clone()),
            ],
            Vec::new(),
            401,
            "X-Access-Token is missing or wrong",
        ),
    ];
    for (method, path, headers, body, status, says) in cases {
        let a = s.send(method, path, &headers, body).await;
        let message = a.json()["message"].as_str().unwrap_or_default().to_string();
        assert_eq!(a.status, status, "{method} {path}: {message}");
        assert!(
            message.contains(says),
            "{method} {path}: {message:?} does not say {says:?}"
        );
        assert!(!message.contains('\n'), "{message:?}");
    }
    // The refused move wrote nothing.
    let moved = s
        .send(
            "POST",
            "/filesystem.Filesystem/Stat",
            &envd,
            br#"{"path":"/tmp/ln-moved"}"#.to_vec(),
        )
        .await;
    assert_eq!(moved.status, 404);
    // A path climbing out resolves inside the sandbox, never on the host.
    let up = s
        .send(
            "POST",
            "/files?path=../../../../tmp/escape-e2b",
            &[
                ("E2b-Sandbox-Id", id.clone()),
                ("X-Access-Token", token.clone()),
            ],
            b"x".to_vec(),
        )
        .await;
    assert_eq!(up.json()[0]["path"], "/tmp/escape-e2b");
    assert!(!std::path::Path::new("/tmp/escape-e2b").exists());
}

/// A `WatchDir` request body, and what its end-of-stream says.
type StreamCase<'a> = (Vec<u8>, &'a str, &'a str);

#[tokio::test]
async fn hostile_watch_streams_end_with_one_clear_error() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    s.put(&id, &token, "/tmp/plain", b"x").await;
    let cases: Vec<StreamCase> = vec![
        (
            b"{}".to_vec(),
            "invalid_argument",
            "the body is shorter than one 5-byte envelope",
        ),
        (
            vec![0, 0, 0, 0, 9, b'{', b'}'],
            "invalid_argument",
            "the envelope says 9 bytes and 2 follow",
        ),
        (
            vec![1, 0, 0, 0, 2, b'{', b'}'],
            "invalid_argument",
            "compressed messages are not accepted",
        ),
        (
            enveloped(&json!({"path": "/tmp/plain"})),
            "invalid_argument",
            "/tmp/plain is not a directory",
        ),
        (
            enveloped(&json!({"path": "missing/dir"})),
            "not_found",
            "/home/user/missing/dir",
        ),
        (
            enveloped(&json!({"path": 7})),
            "invalid_argument",
            "WatchDir request",
        ),
    ];
    for (body, code, says) in cases {
        let a = s
            .envd(
                &id,
                &token,
                "POST",
                "/filesystem.Filesystem/WatchDir",
                "application/connect+json",
                body.clone(),
            )
            .await;
        let all = frames(&a.body);
        assert_eq!(all.len(), 1, "{all:?}");
        let (flags, end) = &all[0];
        assert_eq!(*flags, 2);
        let message = end["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(end["error"]["code"], code, "{message}");
        assert!(message.contains(says), "{message:?} does not say {says:?}");
        assert!(!message.contains('\n'), "{message:?}");
    }
}

/// An unserved procedure, the content type it is sent with, and the
/// shape of its refusal: status and content type.
type UnservedCase<'a> = (&'a str, &'a str, u16, &'a str);

#[tokio::test]
async fn unserved_procedures_are_refused_in_their_clients_shape() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let stream = "application/connect+json";
    let unary = "application/json";
    let cases: Vec<UnservedCase> = vec![
        // Client-streaming by name, whatever it is sent as.
        ("/process.Process/StreamInput", stream, 200, stream),
        ("/process.Process/StreamInput", unary, 200, stream),
        // Unary by name, whatever it is sent as.
        ("/process.Process/Update", unary, 501, unary),
        ("/process.Process/Update", stream, 501, unary),
        // No known name: the shape the request asks for.
        ("/process.Process/Nope", stream, 200, stream),
        ("/filesystem.Filesystem/Nope", unary, 501, unary),
        ("/other.Service/Call", unary, 501, unary),
    ];
    for (path, content_type, status, answered_as) in cases {
        let a = s
            .envd(
                &id,
                &token,
                "POST",
                path,
                content_type,
                enveloped(&json!({})),
            )
            .await;
        assert_eq!(a.status, status, "{path} as {content_type}");
        assert_eq!(a.headers["content-type"], answered_as, "{path}");
        let error = if answered_as == stream {
            let all = frames(&a.body);
            assert_eq!(all.len(), 1, "{path}: {all:?}");
            assert_eq!(all[0].0, 2, "{path}: not an end-of-stream frame");
            all[0].1["error"].clone()
        } else {
            a.json()
        };
        assert_eq!(error["code"], "unimplemented", "{path}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(path), "{message:?} does not name {path}");
    }
}

#[tokio::test]
async fn hostile_connects_end_with_one_clear_error() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let cases: Vec<StreamCase> = vec![
        (
            enveloped(&json!({"process": {"pid": 4_000_000}})),
            "not_found",
            "process pid 4000000 not found",
        ),
        (
            enveloped(&json!({"process": {"tag": "nobody"}})),
            "not_found",
            "process tag \"nobody\" not found",
        ),
        (
            enveloped(&json!({"process": {}})),
            "invalid_argument",
            "names no pid and no tag",
        ),
        (
            enveloped(&json!({"process": {"pid": "x"}})),
            "invalid_argument",
            "Connect request",
        ),
        (b"{}".to_vec(), "invalid_argument", "5-byte envelope"),
    ];
    for (body, code, says) in cases {
        let a = s
            .envd(
                &id,
                &token,
                "POST",
                "/process.Process/Connect",
                "application/connect+json",
                body,
            )
            .await;
        assert_eq!(a.status, 200);
        let all = frames(&a.body);
        assert_eq!(all.len(), 1, "{all:?}");
        let message = all[0].1["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(all[0].1["error"]["code"], code, "{message}");
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
}
