//! The error tables and hostile inputs, as tables.

use corral_backend::ErrorCode;
use corral_e2b::{ConnectCode, connect_code_of, http_status_of};
use serde_json::{Value, json};

use crate::harness::{KEY, enveloped, frames, sandbox_headers, serve};

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

/// A refused `POST /v2/sandboxes`: body, status, what the message says.
type CreateCase<'a> = (Vec<u8>, u16, &'a str);

/// A refused envd call with the JSON headers: path, body, status, what the
/// message says.
type EnvdCase<'a> = (&'a str, &'a [u8], u16, &'a str);

/// The one frame of a stream refused at once: its end-of-stream error.
pub fn lone_error(what: &str, body: &[u8]) -> Value {
    let all = frames(body);
    assert_eq!(all.len(), 1, "{what}: {all:?}");
    assert_eq!(all[0].0, 2, "{what}: not an end-of-stream frame");
    all[0].1["error"].clone()
}

#[tokio::test]
async fn hostile_inputs_get_one_clear_line() {
    let s = serve().await;
    let (id, token) = s.create(json!({"templateID": "base"})).await;
    let (_other, other_token) = s.create(json!({"templateID": "base"})).await;
    let key = ("X-API-KEY", KEY.to_string());
    let named = |token: &str| sandbox_headers(&id, token, &[]);
    let json_type = ("content-type", "application/json");
    let envd = sandbox_headers(&id, &token, &[json_type]);
    let encoded =
        |encoding| sandbox_headers(&id, &token, &[json_type, ("content-encoding", encoding)]);
    // A directory holding a symlink, which the file primitives cannot make.
    let ln = enveloped(
        &json!({"process": {"cmd": "/bin/bash", "args": ["-c", "mkdir -p /tmp/ln && ln -s /tmp /tmp/ln/link"]}}),
    );
    let ln = s.stream(&id, &token, "process.Process/Start", ln).await;
    assert!(frames(&ln.body).len() >= 2, "{:?}", frames(&ln.body));
    // A directory too large to watch.
    let big = crate::watch::many_files((0..5001).map(|i| format!("/tmp/big/f{i}")));
    let multipart = "multipart/form-data; boundary=b";
    let up = s.envd(&id, &token, "POST", "/files", multipart, big).await;
    assert_eq!(up.status, 200);
    let creates: Vec<CreateCase> = vec![
        (
            b"{not json".to_vec(),
            400,
            "the body of POST /sandboxes is not valid",
        ),
        (vec![b' '; 2 * 1024 * 1024], 413, "the body is larger than"),
        (
            br#"{"templateID":"nope"}"#.to_vec(),
            404,
            "template \"nope\" not found",
        ),
        (
            br#"{"templateID":"base","metadata":{"a b":"x"}}"#.to_vec(),
            400,
            "metadata.a b",
        ),
        (
            br#"{"templateID":"base","envVars":{"1A":"x"}}"#.to_vec(),
            400,
            "envVars",
        ),
    ];
    let envd_calls: Vec<EnvdCase> = vec![
        (
            "/filesystem.Filesystem/Move",
            br#"{"source":"/tmp/m","destination":"/tmp/m/inside"}"#,
            400,
            "cannot move /tmp/m into itself (/tmp/m/inside)",
        ),
        (
            "/filesystem.Filesystem/Move",
            br#"{"source":"/","destination":"/tmp/root"}"#,
            400,
            "cannot move / into itself",
        ),
        (
            "/filesystem.Filesystem/Stat",
            br#"{"path":"no/such/relative"}"#,
            404,
            "/home/user/no/such/relative",
        ),
        (
            "/filesystem.Filesystem/GetWatcherEvents",
            br#"{"watcherId":"w-none"}"#,
            404,
            "watcher \"w-none\" not found",
        ),
        (
            "/filesystem.Filesystem/RemoveWatcher",
            br#"{"watcherId":""}"#,
            404,
            "watcher \"\" not found",
        ),
        (
            "/filesystem.Filesystem/CreateWatcher",
            br#"{"path":"/tmp/big/f0"}"#,
            400,
            "/tmp/big/f0 is not a directory",
        ),
        (
            "/filesystem.Filesystem/CreateWatcher",
            br#"{"path":"never-made"}"#,
            404,
            "/home/user/never-made",
        ),
        (
            "/filesystem.Filesystem/CreateWatcher",
            br#"{"path":"/tmp/big"}"#,
            429,
            "/tmp/big holds more than 5000 entries",
        ),
        (
            "/filesystem.Filesystem/CreateWatcher",
            br#"{"path":"/tmp/a\u0000b"}"#,
            400,
            "path",
        ),
        (
            "/filesystem.Filesystem/Move",
            br#"{"source":"/tmp/ln","destination":"/tmp/ln-moved"}"#,
            501,
            "Move of a directory holding a symlink or a special file (/tmp/ln/link)",
        ),
    ];
    let creates = creates.into_iter().map(|(body, status, says)| {
        let headers = vec![key.clone()];
        ("POST", "/v2/sandboxes", headers, body, status, says)
    });
    let envd_calls = envd_calls.into_iter().map(|(path, body, status, says)| {
        ("POST", path, envd.clone(), body.to_vec(), status, says)
    });
    let mut cases: Vec<Case> = creates.chain(envd_calls).collect();
    cases.extend([
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
            named("wrong-token-0123456789"),
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
            named(&token),
            br#"{"process":{"pid":1},"input":{"stdin":"%%%"}}"#.to_vec(),
            404,
            "process pid 1 not found",
        ),
        (
            "GET",
            "/files?path=a%00b",
            named(&token),
            Vec::new(),
            400,
            "path",
        ),
        (
            "POST",
            "/files?path=/tmp/bomb",
            encoded("gzip"),
            crate::gzip::bomb(65),
            413,
            "the gzip body inflates to more than 67108864 bytes",
        ),
        (
            "POST",
            "/files?path=/tmp/notgz",
            encoded("gzip"),
            b"plain bytes, not gzip".to_vec(),
            400,
            "the body is not valid gzip",
        ),
        (
            "POST",
            "/files?path=/tmp/br",
            encoded("br"),
            b"x".to_vec(),
            501,
            "Content-Encoding \"br\" on uploads (gzip is) is not served",
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
            named(&other_token),
            b"{}".to_vec(),
            401,
            "X-Access-Token is missing or wrong",
        ),
        (
            "GET",
            "/files?path=/tmp/a",
            named(&other_token),
            Vec::new(),
            401,
            "X-Access-Token is missing or wrong",
        ),
    ]);
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
            &named(&token),
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
            .stream(&id, &token, "filesystem.Filesystem/WatchDir", body)
            .await;
        let error = lone_error(says, &a.body);
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(error["code"], code, "{message}");
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
        // No known name: the shape the request asks for.
        ("/process.Process/Nope", stream, 200, stream),
        ("/filesystem.Filesystem/Nope", unary, 501, unary),
        ("/other.Service/Call", unary, 501, unary),
    ];
    for (path, content_type, status, answered_as) in cases {
        let body = enveloped(&json!({}));
        let a = s.envd(&id, &token, "POST", path, content_type, body).await;
        assert_eq!(a.status, status, "{path} as {content_type}");
        assert_eq!(a.headers["content-type"], answered_as, "{path}");
        let error = if answered_as == stream {
            lone_error(path, &a.body)
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
        let a = s.stream(&id, &token, "process.Process/Connect", body).await;
        assert_eq!(a.status, 200);
        let error = lone_error(says, &a.body);
        let message = error["message"].as_str().unwrap_or_default();
        assert_eq!(error["code"], code, "{message}");
        assert!(message.contains(says), "{message:?} does not say {says:?}");
    }
}
