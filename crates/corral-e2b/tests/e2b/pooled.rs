//! A refused request leaves its connection fit for the next one, or says
//! `Connection: close`: clients pool connections, and one closed without
//! that header fails their next call.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{KEY, serve};

/// What a connection holds within `idle` of quiet, or until it closes.
async fn read_for(stream: &mut TcpStream, idle: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(Ok(n)) = tokio::time::timeout(idle, stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// The head of the first response in `bytes`, lowercased.
fn first_head(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes).to_lowercase();
    let end = text.find("\r\n\r\n")?;
    Some(text[..end].to_string())
}

/// The refused request's path, its headers, its body's size, and the
/// status it is refused with.
type Case<'a> = (&'a str, Vec<(&'a str, String)>, usize, u16);

#[tokio::test]
async fn a_refusal_before_the_body_is_read_keeps_or_closes_the_connection_cleanly() {
    let s = serve().await;
    let (id, _token) = s.create(json!({"templateID": "base"})).await;
    let wrong_key = vec![("X-API-KEY", "e2b_".to_string() + &"0".repeat(40))];
    let wrong_token = vec![
        ("E2b-Sandbox-Id", id.clone()),
        ("X-Access-Token", "not-the-token".to_string()),
    ];
    let cases: Vec<Case> = vec![
        // The control plane refuses before reading: a small body is drained.
        ("/v2/sandboxes", wrong_key.clone(), 40, 401),
        // A large one is left, and the refusal says Connection: close.
        ("/v2/sandboxes", wrong_key.clone(), 200 * 1024, 401),
        // A control path not served here.
        ("/templates", wrong_key.clone(), 40, 501),
        // envd refuses a wrong token before reading the call.
        ("/process.Process/List", wrong_token.clone(), 40, 401),
        // A stream refused the same way answers 200 and an end-of-stream.
        ("/process.Process/Start", wrong_token.clone(), 40, 200),
        // A Connect procedure not served here.
        ("/process.Process/Unknown", wrong_token.clone(), 40, 501),
    ];
    for (path, headers, size, status) in cases {
        let mut stream = TcpStream::connect(s.addr).await.unwrap();
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-length: {size}\r\ncontent-type: application/json\r\n"
        );
        for (k, v) in &headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut seen = read_for(&mut stream, Duration::from_millis(500)).await;
        if let Some(first) = first_head(&seen) {
            assert!(
                first.starts_with(&format!("http/1.1 {status}")),
                "{path}: {first}"
            );
            if first.contains("connection: close") {
                continue;
            }
        }
        // Not answered yet (the body is awaited), or answered and kept
        // open: the body and a second request follow.
        let second = format!(
            "GET /v2/sandboxes HTTP/1.1\r\nhost: localhost\r\nx-api-key: {KEY}\r\nconnection: close\r\n\r\n"
        );
        let mut rest = vec![b'x'; size];
        rest.extend_from_slice(second.as_bytes());
        let _ = stream.write_all(&rest).await;
        seen.extend(read_for(&mut stream, Duration::from_secs(10)).await);
        let text = String::from_utf8_lossy(&seen).to_lowercase();
        let first = first_head(&seen).unwrap_or_else(|| panic!("{path}: no answer"));
        assert!(
            first.starts_with(&format!("http/1.1 {status}")),
            "{path}: {first}"
        );
        let answered = text.matches("http/1.1 200").count() > usize::from(status == 200);
        assert!(
            first.contains("connection: close") || answered,
            "{path} ({size} bytes): the second request was not answered and the first did not say Connection: close:\n{text}"
        );
    }
}
