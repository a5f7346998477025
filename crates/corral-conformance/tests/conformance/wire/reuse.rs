//! Connection reuse between unary calls, and the retry rule it needs: the
//! client keeps its connection to the server alive and sends call after
//! call on it; a connection the server closed while idle is never written
//! to; a call that may have reached the server is never sent twice unless
//! sending it twice settles as once.
//!
//! Each row: the fault (through `fault_proxy`, or a plain TCP relay that
//! counts connections in front of the real server) → what the client
//! returns, how often the server saw the call, how many connections it
//! took.

use super::common;
use super::fault_proxy;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{provision_request, remote_over, serve, token};
use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, Labels,
};
use corral_backend_memory::MemoryBackend;
use corral_conformance::targets::backend_inventory;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_wire::{RunningServer, WireProvider};
use fault_proxy::{FaultProxy, Plan, UnaryFault};
use tokio::net::{TcpListener, TcpStream};

/// The memory backend behind a server, the fault proxy in front of it,
/// and a `WireProvider` through the proxy (which has made one call,
/// `capabilities`, on one connection).
struct Rig {
    backend: Arc<MemoryBackend>,
    server: RunningServer,
    proxy: FaultProxy,
    client: WireProvider,
}

impl Rig {
    async fn new(plan: Plan) -> Self {
        let backend = Arc::new(MemoryBackend::new());
        let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
        let server = serve(adapter).await;
        let proxy = FaultProxy::to(server.addr(), plan).await;
        let client = WireProvider::connect(&proxy.endpoint(), token())
            .await
            .unwrap();
        Self {
            backend,
            server,
            proxy,
            client,
        }
    }

    fn request(&self) -> SandboxProvisionRequest {
        provision_request(
            self.client.capabilities(),
            "memory",
            RetentionMode::EphemeralZdr,
        )
    }

    /// The backend's sandboxes.
    async fn sandboxes(&self) -> Vec<String> {
        let inventory = backend_inventory(&*self.backend).await.unwrap();
        inventory.sandboxes.into_iter().collect()
    }
}

// Contract spec, "The operations": `provision` must "Allocate the
// instance", one allocation per call; "Allocation handoff": "Delivery is
// at-least-once with idempotent effect. `destroy`, `destroySnapshot`, and
// `rollback` may all be invoked again after a lost response" — provision
// is not among them. The connection is cut after the request reached the
// server (the proxy forwarded it and dropped the reply), on a connection
// the client reused: the client returns the unavailable error, and the
// server saw the call once, on that one connection — never twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provision_cut_after_it_reached_the_server_is_never_sent_twice() {
    let plan = Plan::new().unary("/v1/provision", 0, UnaryFault::DropReply);
    let rig = Rig::new(plan).await;
    let lost = rig.client.provision(rig.request()).await;
    assert_eq!(
        lost.err(),
        Some(SandboxError::operation_failed(
            Operation::Provision,
            FailureReason::PlatformUnavailable
        ))
    );
    assert_eq!(rig.proxy.fired().len(), 1, "the reply was dropped");
    assert_eq!(rig.proxy.replies("/v1/provision").len(), 1, "seen once");
    assert_eq!(rig.proxy.connections(), 1, "no second attempt");
    // The one allocation the lost call made, and no other.
    let orphans = rig.sandboxes().await;
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    rig.backend.destroy(&orphans[0]).await.unwrap();
    rig.server.shut_down().await;
}

// Contract spec, "The operations": `provision` must "Allocate the
// instance", once per call. The server closes the client's idle
// connection between two calls (the socket ends, no `Connection: close`):
// the next call is not written to it; it goes on a new connection,
// succeeds, and the server sees it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_the_server_closed_the_idle_connection_goes_on_a_new_one() {
    let rig = Rig::new(Plan::new()).await;
    rig.proxy.close_connections().await;
    let handoff = rig.client.provision(rig.request()).await.unwrap();
    assert_eq!(rig.proxy.replies("/v1/provision").len(), 1, "seen once");
    assert_eq!(rig.proxy.connections(), 2, "one new connection");
    assert_eq!(rig.sandboxes().await.len(), 1);
    let (_, rollback) = handoff.into_parts();
    rollback.rollback().await.unwrap();
    assert!(rig.sandboxes().await.is_empty());
    rig.server.shut_down().await;
}

/// Provisions and rolls back `rounds` times through `client`: two calls a
/// round, one after the other, none left to a background task.
async fn provision_and_roll_back(
    client: &WireProvider,
    request: &SandboxProvisionRequest,
    rounds: usize,
) {
    for _ in 0..rounds {
        let handoff = client.provision(request.clone()).await.unwrap();
        let (_, rollback) = handoff.into_parts();
        rollback.rollback().await.unwrap();
    }
}

// Contract spec, "The operations": each `provision` allocates once, and
// `rollback` is "a cold compensation for that exact allocation". Reuse:
// the envelope and then sixteen sequential calls go on one connection,
// and the server sees each call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_calls_share_one_connection() {
    let rig = Rig::new(Plan::new()).await;
    provision_and_roll_back(&rig.client, &rig.request(), 8).await;
    assert_eq!(rig.proxy.connections(), 1, "one connection for 17 calls");
    assert_eq!(rig.proxy.replies("/v1/provision").len(), 8);
    assert_eq!(rig.proxy.replies("/v1/provision/rollback").len(), 8);
    assert!(rig.sandboxes().await.is_empty());
    rig.server.shut_down().await;
}

/// A TCP relay on loopback to `upstream` that counts the connections it
/// accepted: in front of the real server, it shows the server keeps a
/// connection alive across calls.
struct Relay {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    async fn to(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Self {
            addr,
            accepted,
            task,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// docs/wire.md, "Costs": a unary call is one exchange on a kept-alive
// connection. The server itself (not only the proxy) keeps the client's
// connection open between responses: the envelope and sixteen calls
// arrive on one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_keeps_the_connection_alive_between_calls() {
    let backend = Arc::new(MemoryBackend::new());
    let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let relay = Relay::to(server.addr()).await;
    let client = WireProvider::connect(&relay.endpoint(), token())
        .await
        .unwrap();
    let request = provision_request(client.capabilities(), "memory", RetentionMode::EphemeralZdr);
    provision_and_roll_back(&client, &request, 8).await;
    assert_eq!(relay.accepted(), 1, "one connection for 17 calls");
    server.shut_down().await;
}

// The same for the backend routes: a remote backend's `describe` and the
// primitives after it share one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_backend_reuses_its_connection() {
    let memory = Arc::new(MemoryBackend::new());
    let (direct, server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    drop(direct);
    let relay = Relay::to(server.addr()).await;
    let remote = corral_wire::RemoteBackend::connect(&relay.endpoint(), token())
        .await
        .unwrap();
    for _ in 0..8 {
        assert!(remote.list(&Labels::new()).await.unwrap().is_empty());
    }
    assert_eq!(relay.accepted(), 1, "one connection for 9 calls");
    server.shut_down().await;
}

// The same for a remote backend's `exec`, whose output streams: once the
// run has settled, the client reads the stream to its end and gives the
// connection back, so create, eight execs (each with output, one a
// failing exit) and destroy after `describe` share one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_exec_gives_its_connection_back() {
    let memory = Arc::new(MemoryBackend::new());
    let (direct, server) = remote_over(Arc::clone(&memory), envelopes::memory()).await;
    drop(direct);
    let relay = Relay::to(server.addr()).await;
    let remote = corral_wire::RemoteBackend::connect(&relay.endpoint(), token())
        .await
        .unwrap();
    let sb = remote.create(CreateRequest::default()).await.unwrap();
    for i in 0..8 {
        let script = if i == 3 {
            "echo out; exit 3"
        } else {
            "echo out"
        };
        let request = ExecRequest::new(Command::shell(script).unwrap());
        let mut sink = CollectedOutput::default();
        let outcome = remote.exec(&sb.id, request, &mut sink).await.unwrap();
        assert_eq!(sink.stdout, b"out\n", "run {i}");
        let code = if i == 3 { 3 } else { 0 };
        assert_eq!(outcome.status, ExitStatus::Code(code), "run {i}");
    }
    remote.destroy(&sb.id).await.unwrap();
    assert_eq!(relay.accepted(), 1, "one connection for 11 calls");
    server.shut_down().await;
}
