//! Requests the server refuses before the provider sees them: no token, a
//! wrong token, another revision, an over-large body, an unknown route —
//! each with its status, its refusal header and a contract error.

use super::common;
use std::sync::Arc;

use common::{serve, token};
use corral_backend_memory::MemoryBackend;
use corral_contract::{FailureReason, Operation, SandboxError};
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_wire::protocol::{CONTRACT_REVISION, Route};
use corral_wire::{Token, WireError, WireProvider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn adapter() -> ContractAdapter<MemoryBackend> {
    ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap()
}

/// A raw HTTP/1.1 exchange: the status, the headers (lower-cased) and the
/// body.
async fn exchange(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}Host: test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // The server may answer (and close) before reading a refused body.
    let _ = stream.write_all(body).await;
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let (headers, body) = reply.split_once("\r\n\r\n").unwrap();
    let status = headers[9..12].parse().unwrap();
    (status, headers.to_ascii_lowercase(), body.to_string())
}

fn post(route: Route, authorization: Option<&str>, revision: &str) -> String {
    let mut head = format!("POST {} HTTP/1.1\r\n", route.path());
    if let Some(a) = authorization {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    head.push_str(&format!("corral-contract-revision: {revision}\r\n"));
    head
}

fn denied(operation: Operation) -> SandboxError {
    SandboxError::operation_failed(operation, FailureReason::PermissionDenied)
}

// Contract spec, "Errors": the adapter error vocabulary is closed; a refusal
// the server makes for the provider is still one of it (SandboxOperationFailed
// naming the route's operation), never a wire-only error.
#[tokio::test]
async fn requests_without_the_token_are_refused_with_401_and_a_contract_error() {
    let server = serve(adapter()).await;
    let bearer = token().header_value();
    let cases = [
        (None, "no token"),
        (Some("Bearer not-the-token-at-all-000"), "wrong token"),
        (Some(&bearer[7..]), "no Bearer scheme"),
    ];
    for (authorization, what) in cases {
        let head = post(Route::Capabilities, authorization, CONTRACT_REVISION);
        let (status, headers, body) = exchange(server.addr(), &head, b"{}").await;
        assert_eq!(status, 401, "{what}");
        assert!(
            headers.contains("corral-wire-refusal: unauthenticated"),
            "{what}"
        );
        // Issue 12 item 17: a caller without the token keeps no connection
        // (no slot of the cap held by a request every few seconds).
        assert!(headers.contains("connection: close"), "{what}: {headers}");
        let error: SandboxError = serde_json::from_str(&body).unwrap();
        assert_eq!(error, denied(Operation::Capabilities), "{what}");
    }
    // The right token is admitted.
    let head = post(Route::Capabilities, Some(&bearer), CONTRACT_REVISION);
    let (status, _, body) = exchange(server.addr(), &head, b"{}").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"placement\""), "{body}");
    server.shut_down().await;
}

#[tokio::test]
async fn a_client_with_the_wrong_token_cannot_connect() {
    let server = serve(adapter()).await;
    let wrong = Token::new("definitely-the-wrong-token").unwrap();
    match WireProvider::connect(&server.endpoint(), wrong).await {
        Err(WireError::Capabilities { error, .. }) => {
            assert_eq!(error, denied(Operation::Capabilities));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    server.shut_down().await;
}

// Contract spec, "Errors": the vocabulary is closed, on the openProcess socket
// too: the refused upgrade carries SandboxOperationFailed naming open_process.
#[tokio::test]
async fn an_unauthenticated_process_socket_is_refused() {
    let server = serve(adapter()).await;
    let head = "GET /v1/open_process HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    let (status, _, body) = exchange(server.addr(), head, b"").await;
    assert_eq!(status, 401);
    let error: SandboxError = serde_json::from_str(&body).unwrap();
    assert_eq!(error, denied(Operation::OpenProcess));
    server.shut_down().await;
}

// Contract spec, "Bounds": enforce them; a body over the route's bound is
// refused before the provider sees it, in the closed vocabulary.
#[tokio::test]
async fn an_over_large_body_is_refused_with_413() {
    let server = serve(adapter()).await;
    let bearer = token().header_value();
    let limit = Route::Destroy.max_body_bytes() as usize;
    let body = vec![b' '; limit + 1];
    let head = post(Route::Destroy, Some(&bearer), CONTRACT_REVISION);
    let (status, headers, reply) = exchange(server.addr(), &head, &body).await;
    assert_eq!(status, 413);
    assert!(headers.contains("corral-wire-refusal: body_too_large"));
    let error: SandboxError = serde_json::from_str(&reply).unwrap();
    assert_eq!(
        error,
        SandboxError::operation_failed(Operation::Destroy, FailureReason::PlatformRejected)
    );
    server.shut_down().await;
}

#[tokio::test]
async fn another_revision_a_malformed_body_and_an_unknown_route_are_refused() {
    let server = serve(adapter()).await;
    let bearer = token().header_value();
    let head = post(Route::Capabilities, Some(&bearer), "corral-wire/1999-01-01");
    let (status, headers, _) = exchange(server.addr(), &head, b"{}").await;
    assert_eq!(status, 400);
    assert!(headers.contains("corral-wire-refusal: revision_mismatch"));

    let head = post(Route::Destroy, Some(&bearer), CONTRACT_REVISION);
    let (status, headers, _) = exchange(server.addr(), &head, b"{\"instance\":1}").await;
    assert_eq!(status, 400);
    assert!(headers.contains("corral-wire-refusal: malformed_body"));

    let head = format!("POST /v1/teleport HTTP/1.1\r\nAuthorization: {bearer}\r\n");
    let (status, headers, _) = exchange(server.addr(), &head, b"{}").await;
    assert_eq!(status, 404);
    assert!(headers.contains("corral-wire-refusal: unknown_route"));
    // Without the token, not even that: 401.
    let (status, headers, _) =
        exchange(server.addr(), "POST /v1/teleport HTTP/1.1\r\n", b"{}").await;
    assert_eq!(status, 401);
    assert!(headers.contains("corral-wire-refusal: unauthenticated"));
    server.shut_down().await;
}
