//! What the wire rows stand on: a contract provider — a
//! corral-runtime's `ContractAdapter` called in process, or the same
//! kind of adapter hosted by a
//! [`WireServer`] on `127.0.0.1` and called through a [`WireProvider`] —
//! holding one active instance.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use corral_backend::{Backend, Verified};
use corral_contract::*;
use corral_registry::{BackendKind, BackendVisitor, Enveloped, OpenError};
use corral_wire::{RunningServer, Token, WireProvider, WireServer};

use crate::error::BenchError;
use crate::measure::{BoxFuture, Role};

/// How a row reaches its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The adapter's members called directly: the floor.
    InProcess,
    /// The adapter behind a wire server on `127.0.0.1`, called through
    /// the wire client.
    Loopback,
}

impl Way {
    /// The beginning of a row's name.
    pub const fn prefix(self) -> &'static str {
        match self {
            Way::InProcess => "in-process",
            Way::Loopback => "wire",
        }
    }

    /// A row's part in its group: in process is the floor the wire rows
    /// are compared with.
    pub const fn role(self) -> Role {
        match self {
            Way::InProcess => Role::Floor,
            Way::Loopback => Role::Compared,
        }
    }
}

/// Which backend a bed's adapter adapts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BedBackend {
    /// The memory backend (no processes, no disk: the provider's own cost
    /// is as small as it gets).
    Memory,
    /// The local backend on a temporary state directory.
    Local,
    /// The linux backend on a temporary state directory.
    Linux,
}

impl BedBackend {
    /// The registry's backend.
    pub const fn kind(self) -> BackendKind {
        match self {
            BedBackend::Memory => BackendKind::Memory,
            BedBackend::Local => BackendKind::Local,
            BedBackend::Linux => BackendKind::Linux,
        }
    }

    /// The backend's name.
    pub const fn as_str(self) -> &'static str {
        self.kind().name()
    }

    /// The linux backend where this host runs it, else the local one: real
    /// processes writing real pipes.
    pub fn for_processes() -> Self {
        if BackendKind::Linux.available().is_ok() {
            BedBackend::Linux
        } else {
            BedBackend::Local
        }
    }
}

/// The members of the contract the rows call, on any provider — the
/// adapter in process or the wire client alike — each call one boxed
/// future, so that both ways pay the same for the indirection.
trait BedProvider: Send + Sync {
    fn capabilities(&self) -> &SandboxProviderCapabilities;
    fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> BoxFuture<'_, Result<Handoff<SandboxInstance>, SandboxError>>;
    fn write_file(&self, request: WriteFileRequest) -> BoxFuture<'_, Result<(), SandboxError>>;
    fn activate(
        &self,
        id: InstanceId,
    ) -> BoxFuture<'_, Result<Handoff<SandboxInstance>, SandboxError>>;
    fn read_file(
        &self,
        request: ReadFileRequest,
    ) -> BoxFuture<'_, Result<ReadFileResult, SandboxError>>;
    fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> BoxFuture<'_, Result<Box<dyn LiveProcess>, SandboxError>>;
    fn destroy(&self, id: InstanceId) -> BoxFuture<'_, Result<(), SandboxError>>;
}

impl<P: SandboxProvider> BedProvider for P {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        SandboxProvider::capabilities(self)
    }
    fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> BoxFuture<'_, Result<Handoff<SandboxInstance>, SandboxError>> {
        Box::pin(SandboxProvider::provision(self, request))
    }
    fn write_file(&self, request: WriteFileRequest) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(SandboxProvider::write_file(self, request))
    }
    fn activate(
        &self,
        id: InstanceId,
    ) -> BoxFuture<'_, Result<Handoff<SandboxInstance>, SandboxError>> {
        Box::pin(SandboxProvider::activate(self, id))
    }
    fn read_file(
        &self,
        request: ReadFileRequest,
    ) -> BoxFuture<'_, Result<ReadFileResult, SandboxError>> {
        Box::pin(SandboxProvider::read_file(self, request))
    }
    fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> BoxFuture<'_, Result<Box<dyn LiveProcess>, SandboxError>> {
        Box::pin(SandboxProvider::open_process(self, request))
    }
    fn destroy(&self, id: InstanceId) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(SandboxProvider::destroy(self, id))
    }
}

/// Puts a backend's contract adapter where `way` says: called in process,
/// or hosted on `127.0.0.1` and called through the wire client.
struct Place {
    way: Way,
}

/// What [`Place`] made: the provider the rows call, the server hosting the
/// adapter (over the wire), and the backend under it.
struct Placed {
    provider: Box<dyn BedProvider>,
    server: Option<RunningServer>,
    backend: Arc<dyn Backend>,
}

impl BackendVisitor for Place {
    type Output = Result<Placed, BenchError>;

    async fn visit<B: Enveloped>(self, backend: Verified<B>) -> Self::Output {
        let backend = backend.into_shared();
        let adapter = corral_registry::adapter(&backend)
            .map_err(|e| BenchError::backend(B::KIND.name(), "adapter", e))?;
        let (provider, server): (Box<dyn BedProvider>, _) = match self.way {
            Way::InProcess => (Box::new(adapter), None),
            Way::Loopback => {
                let server = bind(adapter).await?;
                let client = WireProvider::connect(&server.endpoint(), token()?)
                    .await
                    .map_err(|e| BenchError::io("connecting the wire client", e))?;
                (Box::new(client), Some(server))
            }
        };
        Ok(Placed {
            provider,
            server,
            backend: backend.into_inner(),
        })
    }
}

/// The token of the bench's servers (they listen on loopback only and live
/// as long as one row).
pub(crate) fn token() -> Result<Token, BenchError> {
    Token::new("corral-bench-loopback-token-0123456789").map_err(|e| BenchError::io("token", e))
}

/// A provider with one active instance, and what must be released after it.
pub struct Bed {
    provider: Box<dyn BedProvider>,
    server: Option<RunningServer>,
    backend: Arc<dyn Backend>,
    state_dir: Option<tempfile::TempDir>,
    instance: Option<InstanceId>,
    name: &'static str,
}

impl Bed {
    /// Opens `backend` on a fresh state directory, puts its adapter where
    /// `way` says, and provisions one instance through it (with `/project`
    /// mounted read-write when `project` is true) without activating it.
    pub async fn open(backend: BedBackend, way: Way, project: bool) -> Result<Self, BenchError> {
        let name = backend.as_str();
        let scratch = backend.kind().open_scratch().await.map_err(|e| match e {
            OpenError::StateDir { .. } => BenchError::io("creating a temporary state directory", e),
            e => BenchError::backend(name, "open", e),
        })?;
        let placed = scratch.backend.visit(Place { way }).await?;
        let mut bed = Bed {
            provider: placed.provider,
            server: placed.server,
            backend: placed.backend,
            state_dir: scratch.state_dir,
            instance: None,
            name,
        };
        let request = provision_request(bed.capabilities(), name, project)?;
        let provisioned = bed
            .provider
            .provision(request)
            .await
            .map_err(|e| bed.error("provision", e))?;
        bed.instance = Some(provisioned.into_parts().0.instance_id);
        Ok(bed)
    }

    fn capabilities(&self) -> &SandboxProviderCapabilities {
        self.provider.capabilities()
    }

    fn error(&self, operation: &str, e: SandboxError) -> BenchError {
        BenchError::backend(self.name, operation, e)
    }

    /// The instance (provisioned at open; `None` once torn down).
    pub fn instance(&self) -> Result<&InstanceId, BenchError> {
        self.instance
            .as_ref()
            .ok_or_else(|| BenchError::io("wire bed", "no instance"))
    }

    /// Writes `content` at `path` (before activation: the trusted port).
    pub async fn write_file(&self, path: &SandboxPath, content: Vec<u8>) -> Result<(), BenchError> {
        let request = WriteFileRequest {
            instance_id: self.instance()?.clone(),
            path: path.clone(),
            content: FileContent::new(content).map_err(|e| BenchError::io("file content", e))?,
            mode: FileMode::DEFAULT,
        };
        self.provider
            .write_file(request)
            .await
            .map_err(|e| self.error("write_file", e))
    }

    /// Activates the instance.
    pub async fn activate(&self) -> Result<(), BenchError> {
        let id = self.instance()?.clone();
        self.provider
            .activate(id)
            .await
            .map(drop)
            .map_err(|e| self.error("activate", e))
    }

    /// One `read_file`.
    pub async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, BenchError> {
        self.provider
            .read_file(request)
            .await
            .map_err(|e| self.error("read_file", e))
    }

    /// Runs `argv` with `open_process`, reads its stdout to EOF in reads of
    /// up to `buffer` bytes, waits for its exit (which must be 0) and
    /// destroys it; returns how many stdout bytes arrived.
    pub async fn stdout_of(&self, argv: &[&str], buffer: usize) -> Result<u64, BenchError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| BenchError::io("open_process", "empty command"))?;
        let request = OpenProcessRequest {
            instance_id: self.instance()?.clone(),
            process: SandboxProcessRequest {
                executable: Executable::new(*program)
                    .map_err(|e| BenchError::io("executable", e))?,
                arguments: Arguments::new(args.iter().copied())
                    .map_err(|e| BenchError::io("arguments", e))?,
                working_directory: None,
                environment: Environment::new(),
            },
        };
        let mut live = self
            .provider
            .open_process(request)
            .await
            .map_err(|e| self.error("open_process", e))?;
        let mut output = live
            .take_output()
            .ok_or_else(|| BenchError::io("open_process", "no stdout"))?;
        let read = drain(&mut output, buffer).await;
        let exit = live.wait().await;
        let destroyed = live.destroy().await;
        let bytes = read.map_err(|e| self.error("reading stdout", e))?;
        match exit.map_err(|e| self.error("wait", e))? {
            ProcessExit::Code(c) if c == ExitCode::SUCCESS => {}
            other => {
                return Err(BenchError::CommandFailed {
                    command: argv.join(" "),
                    status: format!("{other:?}"),
                });
            }
        }
        destroyed.map_err(|e| self.error("process destroy", e))?;
        Ok(bytes)
    }

    /// Destroys the instance, shuts the server down, closes the backend and
    /// removes its state directory; every step is tried, the first failure
    /// is returned.
    pub async fn close(mut self) -> Result<(), BenchError> {
        let mut first: Option<BenchError> = None;
        if let Some(id) = self.instance.take()
            && let Err(e) = self.provider.destroy(id).await
        {
            first.get_or_insert(self.error("destroy", e));
        }
        if let Some(server) = self.server.take() {
            server.shut_down().await;
        }
        if let Err(e) = self.backend.close().await {
            first.get_or_insert(BenchError::backend(self.name, "close", e));
        }
        if let Some(dir) = self.state_dir.take()
            && let Err(e) = dir.close()
        {
            first.get_or_insert(BenchError::io("removing the bench state directory", e));
        }
        first.map_or(Ok(()), Err)
    }
}

/// Binds a server for `provider` on `127.0.0.1:0` and starts it.
async fn bind<P: SandboxProvider + 'static>(provider: P) -> Result<RunningServer, BenchError> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    WireServer::bind(addr, provider, token()?)
        .await
        .and_then(WireServer::spawn)
        .map_err(|e| BenchError::io("starting the wire server on 127.0.0.1", e))
}

/// Reads `source` to its EOF; returns the byte count.
async fn drain(source: &mut Pin<Box<dyn ByteSource>>, buffer: usize) -> Result<u64, SandboxError> {
    let mut buf = vec![0u8; buffer.max(1)];
    let mut total = 0u64;
    loop {
        let n = poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf)).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// A path the bench names; its texts are valid.
pub fn sandbox_path(text: &str) -> Result<SandboxPath, BenchError> {
    SandboxPath::new(text).map_err(|e| BenchError::io("sandbox path", e))
}

/// A ZDR provision request for `provider`, no network, an hour to live.
fn provision_request(
    envelope: &SandboxProviderCapabilities,
    provider: &str,
    project: bool,
) -> Result<SandboxProvisionRequest, BenchError> {
    let invalid = |e: InvalidValue| BenchError::io("provision request", e);
    let now = Timestamp::from_system_time(SystemTime::now()).map_err(invalid)?;
    let mounts = if project {
        vec![MountSpec {
            path: sandbox_path("/project")?,
            access: MountAccess::ReadWrite,
        }]
    } else {
        Vec::new()
    };
    let platform = *envelope
        .platforms
        .first()
        .ok_or_else(|| BenchError::io("provision request", "the envelope names no platform"))?;
    Ok(SandboxProvisionRequest {
        provider: ProviderId::new(provider).map_err(invalid)?,
        placement: envelope.placement,
        workspace_id: WorkspaceId::new("bench").map_err(invalid)?,
        session_id: SessionId::new("bench").map_err(invalid)?,
        run_id: RunId::new("bench").map_err(invalid)?,
        attempt_id: AttemptId::new("bench").map_err(invalid)?,
        lease_id: LeaseId::new("bench").map_err(invalid)?,
        lease_epoch: LeaseEpoch::new(1).map_err(invalid)?,
        target: TargetId::new("bench").map_err(invalid)?,
        profile: SandboxProfile {
            id: ProfileId::new("bench").map_err(invalid)?,
            version: ProfileVersion::new("1").map_err(invalid)?,
            digest: Digest::from_sha256_bytes([0x5b; 32]),
            retention: RetentionMode::EphemeralZdr,
            network: NetworkPolicy::None,
            max_duration_seconds: DurationSeconds::new(3600).map_err(invalid)?,
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform,
        root_image: ImageReference::from_parts(
            "corral.invalid/bench/root",
            &Digest::from_sha256_bytes([0xb5; 32]),
        )
        .map_err(invalid)?,
        mounts: Mounts::new(mounts).map_err(invalid)?,
        expires_at: now
            .checked_add_millis(3_600_000)
            .ok_or_else(|| BenchError::io("provision request", "expiry out of range"))?,
    })
}
