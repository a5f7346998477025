//! The wire over TLS: a server given a certificate serves the unary routes
//! and `openProcess`'s WebSocket (`wss://`) to a client that trusts its CA,
//! with the same streams as plain HTTP; a client that does not trust it is
//! refused on connect with a typed handshake error.

use super::common;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;

use common::{provision_active, provision_request, read_to_end, token, write_all};
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_testkit::tls::TestPki;
use corral_wire::{HandshakeError, ServerTls, Trust, WireError, WireProvider, WireServer};

// Contract spec, "openProcess": output delivers ordered bytes with a real
// EOF, nothing lost, nothing duplicated — over TLS as over plain HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_streams_whole_over_tls_and_an_untrusted_client_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::create(dir.path()).unwrap();
    let adapter =
        ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = WireServer::bind(addr, adapter, token())
        .await
        .unwrap()
        .with_tls(ServerTls::from_pem_files(&pki.cert, &pki.key).unwrap())
        .spawn()
        .unwrap();
    assert!(
        server.endpoint().starts_with("https://"),
        "{}",
        server.endpoint()
    );

    let trust = Trust::only(&pki.ca).unwrap();
    let client = WireProvider::connect_trusting(&server.endpoint(), token(), trust)
        .await
        .unwrap();
    let runtime = Runtime::new(client).unwrap();
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let instance = provision_active(&runtime, request).await;
    let mut live = runtime
        .open_process(OpenProcessRequest {
            instance_id: instance.instance_id.clone(),
            process: common::cat(),
        })
        .await
        .unwrap();
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    let payload: Vec<u8> = (0..300_000).map(|i| (i % 251) as u8).collect();
    let reader = tokio::spawn(async move { read_to_end(&mut output).await });
    write_all(&mut input, &payload).await;
    poll_fn(|cx| input.as_mut().poll_close(cx)).await.unwrap();
    assert!(reader.await.unwrap() == payload, "whole and in order");
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::SUCCESS)
    );
    runtime.destroy(instance.instance_id).await.unwrap();

    // Trusting only another certificate (the PKI's self-signed one).
    let refused = WireProvider::connect_trusting(
        &server.endpoint(),
        token(),
        Trust::only(&pki.self_signed).unwrap(),
    )
    .await;
    assert!(
        matches!(
            refused,
            Err(WireError::Tls {
                error: HandshakeError::UnknownIssuer,
                ..
            })
        ),
        "{refused:?}"
    );
    server.shut_down().await;
}
