//! A conformance target whose provider is a `WireProvider` talking to a
//! server on this machine's loopback that hosts another target's
//! provider; the requests, the runtime-over-the-wire setup, a
//! `RemoteBackend` over a served backend, and the stream helpers the
//! other wire tests share.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use corral_backend::{Backend, BackendError};
use corral_conformance::{ConformanceTarget, EgressFixture, Inventory, Target};
use corral_contract::*;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_wire::{RemoteBackend, RunningServer, Token, WireProvider, WireServer};

/// The token every test server admits.
pub fn token() -> Token {
    Token::new("corral-wire-test-token-0123456789").unwrap()
}

/// Serves `provider` on `127.0.0.1:0`.
pub async fn serve<P: SandboxProvider + 'static>(provider: P) -> RunningServer {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    WireServer::bind(addr, provider, token())
        .await
        .unwrap()
        .spawn()
        .unwrap()
}

/// `provider` behind a server, and the runtime over a `WireProvider`
/// connected to it.
pub async fn runtime_over<P: SandboxProvider + 'static>(
    provider: P,
) -> (Runtime<WireProvider>, RunningServer) {
    let server = serve(provider).await;
    let client = WireProvider::connect(&server.endpoint(), token())
        .await
        .unwrap();
    (Runtime::new(client).unwrap(), server)
}

/// `backend` served with `envelope` (contract and primitives), and a
/// remote backend over it.
pub async fn remote_over<B: Backend + 'static>(
    backend: Arc<B>,
    envelope: SandboxProviderCapabilities,
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
    envelope: SandboxProviderCapabilities,
) -> (RemoteBackend, RunningServer) {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(remote_over(backend, envelope))
    })
}

/// Provisions `request` and activates the instance.
pub async fn provision_active(
    runtime: &Runtime<WireProvider>,
    request: SandboxProvisionRequest,
) -> SandboxInstance {
    let (instance, _) = runtime.provision(request).await.unwrap().into_parts();
    let (active, _) = runtime
        .activate(instance.instance_id)
        .await
        .unwrap()
        .into_parts();
    active
}

/// `request` with `/project` mounted read-write.
pub fn with_project(mut request: SandboxProvisionRequest) -> SandboxProvisionRequest {
    request.mounts = Mounts::new(vec![MountSpec {
        path: SandboxPath::new("/project").unwrap(),
        access: MountAccess::ReadWrite,
    }])
    .unwrap();
    request
}

/// Writes all of `bytes` (without flushing: closing the sink flushes).
pub async fn write_all(sink: &mut Pin<Box<dyn ByteSink>>, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let n = poll_fn(|cx| sink.as_mut().poll_write(cx, bytes))
            .await
            .unwrap();
        bytes = &bytes[n..];
    }
}

/// Reads `source` to its EOF.
pub async fn read_to_end(source: &mut Pin<Box<dyn ByteSource>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf))
            .await
            .unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// `inner`'s provider behind a server, reached through `WireProvider`.
pub struct WireTarget<T: ConformanceTarget> {
    pub inner: T,
    /// Kept so that the server runs as long as the target.
    _server: RunningServer,
    client: WireProvider,
}

impl<T: ConformanceTarget> WireTarget<T> {
    pub async fn over(inner: T) -> Self {
        let server = serve(inner.provider().unwrap()).await;
        let client = WireProvider::connect(&server.endpoint(), token())
            .await
            .unwrap();
        Self {
            inner,
            _server: server,
            client,
        }
    }
}

impl<T: ConformanceTarget> Target for WireTarget<T> {
    fn name(&self) -> String {
        self.inner.name()
    }
}

impl<T: ConformanceTarget> ConformanceTarget for WireTarget<T> {
    type Provider = WireProvider;

    fn provider(&self) -> Result<WireProvider, SandboxError> {
        Ok(self.client.clone())
    }

    fn egress(&self) -> Option<EgressFixture> {
        self.inner.egress()
    }

    fn allowlist_egress(&self) -> Option<EgressFixture> {
        self.inner.allowlist_egress()
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        self.inner.inventory().await
    }

    fn root_image(&self) -> ImageReference {
        self.inner.root_image()
    }
}

/// `cat` with no arguments, in the sandbox's home and environment: the
/// process the stream rows feed and read back.
pub fn cat() -> SandboxProcessRequest {
    SandboxProcessRequest {
        executable: Executable::new("cat").unwrap(),
        arguments: Arguments::new(std::iter::empty::<&str>()).unwrap(),
        working_directory: None,
        environment: Environment::new(),
    }
}

pub fn in_seconds(seconds: i64) -> Timestamp {
    let now = Timestamp::from_system_time(SystemTime::now()).unwrap();
    now.checked_add_millis(seconds * 1000).unwrap()
}

/// A ZDR provision request with no mounts and no network.
pub fn provision_request(
    envelope: &SandboxProviderCapabilities,
    provider: &str,
    retention: RetentionMode,
) -> SandboxProvisionRequest {
    SandboxProvisionRequest {
        provider: ProviderId::new(provider).unwrap(),
        placement: envelope.placement,
        workspace_id: WorkspaceId::new("workspace-1").unwrap(),
        session_id: SessionId::new("session-1").unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("attempt-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(1).unwrap(),
        target: TargetId::new("target-1").unwrap(),
        profile: SandboxProfile {
            id: ProfileId::new("profile-1").unwrap(),
            version: ProfileVersion::new("1").unwrap(),
            digest: Digest::from_sha256_bytes([7; 32]),
            retention,
            network: NetworkPolicy::None,
            max_duration_seconds: DurationSeconds::new(600).unwrap(),
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform: envelope.platforms[0],
        root_image: corral_conformance::synthetic_root_image(),
        mounts: Mounts::new(Vec::new()).unwrap(),
        expires_at: in_seconds(3600),
    }
}
