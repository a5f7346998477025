//! A backend behind `corral serve`'s server (contract and primitives) on
//! this machine's loopback, and a `RemoteBackend` connected to it.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use corral_backend::Backend;
use corral_runtime::adapter::ContractAdapter;
use corral_wire::{RemoteBackend, RunningServer, Token, WireServer};

/// The token every test server admits.
pub fn token() -> Token {
    Token::new("corral-wire-remote-test-token-0123456789").unwrap()
}

/// `backend` served with `envelope`, and a remote backend over it.
pub async fn remote_over<B: Backend + 'static>(
    backend: Arc<B>,
    envelope: corral_contract::SandboxProviderCapabilities,
) -> (RemoteBackend, RunningServer) {
    let adapter = ContractAdapter::new(Arc::clone(&backend), envelope).unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = WireServer::bind(addr, adapter, token())
        .await
        .unwrap()
        .serving_backend(backend)
        .spawn()
        .unwrap();
    let remote = RemoteBackend::connect(&server.endpoint(), token())
        .await
        .unwrap();
    (remote, server)
}

/// [`remote_over`] from a synchronous set-up inside a multi-thread runtime
/// (the backend-rule suite's subject is made synchronously).
pub fn remote_over_blocking<B: Backend + 'static>(
    backend: Arc<B>,
    envelope: corral_contract::SandboxProviderCapabilities,
) -> (RemoteBackend, RunningServer) {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(remote_over(backend, envelope))
    })
}
