//! `get_host(port)`: a request whose Host is `<port>-<id>.<domain>` (or
//! whose `E2b-Sandbox-Port` names a port) is relayed to that port of the
//! sandbox, HTTP and Upgrade alike; a backend without `connect_port`
//! answers 501, a closed port 502, an unknown sandbox 404, and a Host
//! that is not a port's 400 or the usual routes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use corral_backend_local::LocalBackend;
use corral_e2b::E2bConfig;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{Served, serve, serve_backend, serve_connections, serve_with};

/// Sends `head` (and `body`) on a new connection to `served` and reads
/// the whole answer (the request asks to close).
async fn raw(served: &Served, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out));
    read.await.expect("the answer ends").unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:.200}"));
    (status, text)
}

/// A GET of `path` for `host` (with the `extra` header lines), whole.
async fn get(served: &Served, host: &str, path: &str, extra: &str) -> (u16, String) {
    let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n");
    raw(served, &head, b"").await
}

/// The body of an answer (after the head).
fn body_of(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[tokio::test]
async fn a_backend_without_connect_port_answers_501_and_hostile_hosts_are_refused() {
    let served = serve().await;
    let (id, _) = served.create(json!({"templateID": "base"})).await;
    let (status, answer) = get(&served, &format!("8080-{id}.corral.test"), "/", "").await;
    assert_eq!(status, 501, "{answer}");
    let e: serde_json::Value = serde_json::from_str(body_of(&answer)).unwrap();
    assert_eq!(e["code"], 501);
    assert!(e["message"].as_str().unwrap().contains("port 8080"), "{e}");

    let rows: Vec<(&str, String, &str, u16)> = vec![
        ("port 0", format!("0-{id}.corral.test"), "", 400),
        ("port 65536", format!("65536-{id}.corral.test"), "", 400),
        (
            "a huge port",
            format!("123456789012345678901234-{id}.x"),
            "",
            400,
        ),
        (
            "an unknown sandbox",
            "8080-nope.corral.test".into(),
            "",
            404,
        ),
        ("an id with dots", format!("8080-{id}.evil.{id}.x"), "", 501),
        ("dots make another id", "8080-a.b.c".into(), "", 404),
        // Not a port's Host: the usual routes answer (no route for `/`).
        (
            "a non-numeric port",
            format!("http-{id}.corral.test"),
            "",
            404,
        ),
        ("no domain", format!("8080-{id}"), "", 404),
        (
            "a non-numeric port header",
            "127.0.0.1".into(),
            "E2b-Sandbox-Id: x\r\nE2b-Sandbox-Port: web\r\n",
            400,
        ),
        (
            "a port header without a sandbox",
            "127.0.0.1".into(),
            "E2b-Sandbox-Port: 8080\r\n",
            400,
        ),
        (
            "a port header naming an unknown sandbox",
            "127.0.0.1".into(),
            "E2b-Sandbox-Id: ../../x\r\nE2b-Sandbox-Port: 8080\r\n",
            404,
        ),
    ];
    for (attack, host, extra, expected) in rows {
        let (status, answer) = get(&served, &host, "/", extra).await;
        assert_eq!(status, expected, "{attack}: {answer}");
        let body = body_of(&answer);
        assert!(
            !body.trim_end().contains('\n'),
            "{attack}: one line: {body}"
        );
    }
    // A wire-looking path addressed to a port is the port's, not the wire's.
    let (status, _) = get(&served, &format!("8080-{id}.x"), "/v1/create", "").await;
    assert_eq!(status, 501);
}

/// A server on the host's loopback (a local sandbox's ports are the
/// host's): GET answers its path, POST echoes its body's length, an
/// `Upgrade: echo` is answered 101 and then echoes bytes.
async fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    serve_connections(listener, service_fn(answer));
    port
}

/// The upstream's answer to `req`.
async fn answer(mut req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    if req.headers().get("upgrade").is_some() {
        let on = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            if let Ok(up) = on.await {
                let (mut r, mut w) = tokio::io::split(TokioIo::new(up));
                let _ = tokio::io::copy(&mut r, &mut w).await;
            }
        });
        let mut res = Response::new(Full::new(Bytes::new()));
        *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        res.headers_mut()
            .insert("connection", "upgrade".parse().unwrap());
        res.headers_mut().insert("upgrade", "echo".parse().unwrap());
        return Ok(res);
    }
    let line = format!(
        "{} {} host={} routing={}",
        req.method(),
        req.uri(),
        req.headers()
            .get("host")
            .map_or("", |h| h.to_str().unwrap_or("")),
        req.headers().get("e2b-sandbox-port").is_some(),
    );
    let body = req.into_body().collect().await?.to_bytes();
    Ok(Response::new(Full::new(Bytes::from(format!(
        "{line} body={}",
        body.len()
    )))))
}

/// Sends an `Upgrade: echo` request for `host`: the answer's head
/// (lowercased) and the connection.
async fn upgrade(served: &Served, host: &str) -> (String, TcpStream) {
    let mut s = TcpStream::connect(served.addr).await.unwrap();
    let head =
        format!("GET /ws HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 1, "the head ends");
        got.push(byte[0]);
    }
    (String::from_utf8_lossy(&got).to_ascii_lowercase(), s)
}

#[tokio::test]
async fn upgraded_connections_are_bounded_and_their_places_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let config = E2bConfig {
        max_tunnels: 1,
        ..E2bConfig::default()
    };
    let served = serve_with(backend, config).await;
    let (id, _) = served.create(json!({"templateID": "base"})).await;
    let host = format!("{}-{id}.corral.test", upstream().await);
    let (head, first) = upgrade(&served, &host).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    let (head, _) = upgrade(&served, &host).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    // Plain requests are not tunnels.
    assert_eq!(get(&served, &host, "/", "").await.0, 200);
    drop(first);
    let mut again = None;
    for _ in 0..100 {
        let (head, s) = upgrade(&served, &host).await;
        if head.starts_with("http/1.1 101") {
            again = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        again.is_some(),
        "the place came back once the tunnel closed"
    );
}

#[tokio::test]
async fn any_port_of_a_local_sandbox_is_relayed_over_http_and_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let served = serve_backend(backend.clone()).await;
    let (id, _) = served.create(json!({"templateID": "base"})).await;
    let port = upstream().await;
    let host = format!("{port}-{id}.corral.test");

    let (status, answer) = get(&served, &host, "/v1/x?q=1", "").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        body_of(&answer),
        format!("GET /v1/x?q=1 host={host} routing=false body=0")
    );

    // A body is streamed through (1 MiB, chunked by the client).
    let big = vec![b'x'; 1 << 20];
    let head = format!(
        "POST /up HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        big.len()
    );
    let (status, answer) = raw(&served, &head, &big).await;
    assert_eq!(status, 200, "{answer:.300}");
    assert!(body_of(&answer).ends_with("body=1048576"), "{answer:.300}");

    // By headers, as an SDK configured with a sandbox URL addresses it.
    let extra = format!("E2b-Sandbox-Id: {id}\r\nE2b-Sandbox-Port: {port}\r\n");
    let (status, answer) = get(&served, "127.0.0.1", "/h", &extra).await;
    assert_eq!(status, 200, "{answer}");
    assert!(body_of(&answer).starts_with("GET /h host=127.0.0.1 routing=false"));

    // An Upgrade: 101, then bytes both ways.
    let (head, mut s) = upgrade(&served, &host).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: echo"), "{head}");
    for message in [&b"ping"[..], b"a second message", &[0u8, 255, 10, 13]] {
        s.write_all(message).await.unwrap();
        let mut back = vec![0u8; message.len()];
        tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back, message);
    }
    drop(s);

    // A closed port: 502, one line.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (status, answer) = get(&served, &format!("{closed}-{id}.corral.test"), "/", "").await;
    assert_eq!(status, 502, "{answer}");
    assert!(body_of(&answer).contains("nothing listens"), "{answer}");

    // Gone with its sandbox.
    let path = format!("/sandboxes/{id}");
    let killed = served.api("DELETE", &path, serde_json::Value::Null).await;
    assert_eq!(killed.status, 204);
    let (status, _) = get(&served, &host, "/", "").await;
    assert_eq!(status, 404);
}
