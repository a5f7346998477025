//! [`WireProvider`]: a `SandboxProvider` whose members are requests to a
//! corral-wire server. It decodes what comes back into the contract's
//! types (which validate on decode) and nothing more: hold it behind the
//! corral runtime, which validates every result exactly as it validates an
//! in-process provider.

mod endpoint;
mod live;
pub(crate) mod pool;
mod process;
mod retry;
pub(crate) mod transport;

use std::sync::Arc;

use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, CleanupRequest, CleanupResult,
    CloneSnapshotRequest, ExecuteRequest, Handoff, HandoffMember, InstanceId, ListDirRequest,
    ListDirResult, ListProjectDirRequest, ListProjectDirResult, LiveProcess, OpenProcessRequest,
    ReadFileRequest, ReadFileResult, ReadFilesRequest, ReadFilesResult, ReleaseDisposition,
    ReleaseRequest, ResumeRequest, SandboxError, SandboxExecutionResult, SandboxInstance,
    SandboxProvider, SandboxProviderCapabilities, SandboxProvisionRequest, SnapshotId, SnapshotRef,
    SnapshotRequest, WriteFileRequest,
};
use serde::de::DeserializeOwned;

use crate::auth::Token;
use crate::protocol::{HandoffReply, InstanceBody, Route, SnapshotBody, TransactionReply};
use crate::tls::Trust;
pub use endpoint::{Endpoint, EndpointError, Scheme};
use live::{WireRollback, WireTransaction};
use transport::Transport;

/// Why a [`WireProvider`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The endpoint is malformed.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// What the client trusts could not be gathered (`https://` only).
    #[error("{endpoint}: {error}")]
    Trust {
        /// The server.
        endpoint: String,
        /// Why.
        error: crate::tls::TrustError,
    },
    /// The TLS connection to the server failed: its certificate is not
    /// trusted or not for its name, or it does not speak TLS.
    #[error("{endpoint}: TLS: {error}")]
    Tls {
        /// The server.
        endpoint: String,
        /// What failed.
        error: crate::tls::HandshakeError,
    },
    /// The server refused or failed `capabilities`.
    #[error("{endpoint}: capabilities: {error}")]
    Capabilities {
        /// The server.
        endpoint: String,
        /// The contract error.
        error: SandboxError,
    },
}

/// A contract provider on another machine (or process), over corral-wire.
///
/// Cloning shares the connection settings and the envelope.
#[derive(Debug, Clone)]
pub struct WireProvider {
    transport: Arc<Transport>,
    capabilities: SandboxProviderCapabilities,
}

impl WireProvider {
    /// Connects to `endpoint` (`http://HOST:PORT` or `https://HOST:PORT`)
    /// with `token`, reading the server's envelope once: it is "unchanging
    /// for this revision". An `https://` server is verified against the
    /// system's roots and the CA file `CORRAL_CA_FILE` names
    /// ([`Trust::from_env`]).
    pub async fn connect(endpoint: &str, token: Token) -> Result<Self, WireError> {
        let endpoint = Endpoint::parse(endpoint)?;
        let trust = match endpoint.scheme() {
            Scheme::Http => None,
            Scheme::Https => Some(Trust::from_env().map_err(|error| WireError::Trust {
                endpoint: endpoint.to_string(),
                error,
            })?),
        };
        Self::open(endpoint, token, trust).await
    }

    /// Connects as [`WireProvider::connect`] does, an `https://` server
    /// verified against `trust` (ignored for `http://`).
    pub async fn connect_trusting(
        endpoint: &str,
        token: Token,
        trust: Trust,
    ) -> Result<Self, WireError> {
        let endpoint = Endpoint::parse(endpoint)?;
        Self::open(endpoint, token, Some(trust)).await
    }

    async fn open(
        endpoint: Endpoint,
        token: Token,
        trust: Option<Trust>,
    ) -> Result<Self, WireError> {
        let transport = Arc::new(Transport::new(endpoint, token, trust));
        transport
            .check_tls()
            .await
            .map_err(|error| WireError::Tls {
                endpoint: transport.endpoint.to_string(),
                error,
            })?;
        let capabilities = transport
            .post(Route::Capabilities, &serde_json::json!({}))
            .await
            .map_err(|error| WireError::Capabilities {
                endpoint: transport.endpoint.to_string(),
                error,
            })?;
        Ok(Self {
            transport,
            capabilities,
        })
    }

    /// The server.
    pub fn endpoint(&self) -> &Endpoint {
        &self.transport.endpoint
    }

    async fn post<Req: serde::Serialize, Res: DeserializeOwned>(
        &self,
        route: Route,
        body: &Req,
    ) -> Result<Res, SandboxError> {
        self.transport.post(route, body).await
    }

    async fn handoff<Req: serde::Serialize, T: DeserializeOwned + 'static>(
        &self,
        member: HandoffMember,
        body: &Req,
    ) -> Result<Handoff<T>, SandboxError> {
        let reply: HandoffReply<T> = self.post(Route::of_handoff(member), body).await?;
        let rollback = WireRollback::new(Arc::clone(&self.transport), member, reply.handoff);
        Ok(Handoff::new(reply.value, rollback))
    }
}

impl SandboxProvider for WireProvider {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        &self.capabilities
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.handoff(HandoffMember::Provision, &request).await
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        self.post(Route::WriteFile, &request).await
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        let reply: TransactionReply = self.post(Route::BeginActiveWrite, &request).await?;
        Ok(Box::new(WireTransaction::new(
            Arc::clone(&self.transport),
            reply,
        )))
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        let body = InstanceBody { instance_id };
        self.handoff(HandoffMember::Activate, &body).await
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        self.post(Route::Execute, &request).await
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        self.post(Route::ReadFile, &request).await
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        self.post(Route::ReadFiles, &request).await
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        self.post(Route::ListDir, &request).await
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        self.post(Route::ListProjectDir, &request).await
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.handoff(HandoffMember::Snapshot, &request).await
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.handoff(HandoffMember::CloneSnapshot, &request).await
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.handoff(HandoffMember::Release, &request).await
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.handoff(HandoffMember::Resume, &request).await
    }

    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        self.post(Route::Destroy, &InstanceBody { instance_id })
            .await
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        self.post(Route::DestroySnapshot, &SnapshotBody { snapshot_id })
            .await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        self.post(Route::Cleanup, &request).await
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        let process = process::WireProcess::open(&self.transport, request).await?;
        Ok(Box::new(process))
    }
}
