//! [`RemoteBackend`]: the backend primitives of a corral host on another
//! machine, over the backend routes of its `corral serve`
//! ([`crate::protocol::backend`]), so that the SDK works against it as
//! against an in-process backend: `Sandbox::create(remote, …)`.
//!
//! It declares what the served backend declares, less what the wire does
//! not carry (live process stdio, terminals, contained reads: see
//! [`crate::protocol::backend::carried`]). Its name is `remote`; a
//! sandbox's `SandboxInfo::backend` still names the backend that runs it.

mod call;
mod exec;
mod files;
mod optional;

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{
    Backend, BackendError, BatchWriteOps, Capabilities, CreateRequest, ExecOutcome, ExecRequest,
    FileOps, KeyMode, Labels, OutputSink, PauseOps, PreviewUrl, RequestError, SandboxInfo,
    SnapshotCloneOps, SnapshotOps, TreeListOps, UsageOps,
};

use crate::auth::Token;
use crate::client::transport::Transport;
use crate::client::{Endpoint, Scheme};
use crate::protocol::backend::{
    BackendRoute, Description, KeyBody, LabelsBody, PortBody, SandboxRef,
};
use crate::tls::Trust;
use call::Remote;
use files::RemoteFiles;

/// `endpoint` parsed, or the setting refused.
fn parse(endpoint: &str) -> Result<Endpoint, BackendError> {
    Endpoint::parse(endpoint).map_err(|e| {
        RequestError::Setting {
            name: "remote endpoint".into(),
            value: endpoint.to_string(),
            why: e.to_string(),
        }
        .into()
    })
}

/// The name every remote backend reports.
pub const REMOTE_NAME: &str = "remote";

/// A backend on another corral host, reached over corral-wire.
#[derive(Debug)]
pub struct RemoteBackend {
    remote: Arc<Remote>,
    served: String,
    key_mode: KeyMode,
    capabilities: Capabilities,
    files: RemoteFiles,
}

impl RemoteBackend {
    /// Connects to `endpoint` (`http://HOST:PORT` or `https://HOST:PORT`,
    /// a `corral serve`) with `token` and reads what it serves once. An
    /// `https://` server is verified against the system's roots and the CA
    /// file `CORRAL_CA_FILE` names ([`Trust::from_env`]).
    pub async fn connect(endpoint: &str, token: Token) -> Result<Self, BackendError> {
        let parsed = parse(endpoint)?;
        let trust = match parsed.scheme() {
            Scheme::Http => None,
            Scheme::Https => Some(Trust::from_env().map_err(|e| RequestError::Setting {
                name: crate::tls::CA_FILE_ENV.into(),
                value: std::env::var(crate::tls::CA_FILE_ENV).unwrap_or_default(),
                why: e.to_string(),
            })?),
        };
        Self::open(parsed, token, trust).await
    }

    /// Connects as [`RemoteBackend::connect`] does, an `https://` server
    /// verified against `trust` (ignored for `http://`).
    pub async fn connect_trusting(
        endpoint: &str,
        token: Token,
        trust: Trust,
    ) -> Result<Self, BackendError> {
        Self::open(parse(endpoint)?, token, Some(trust)).await
    }

    async fn open(
        endpoint: Endpoint,
        token: Token,
        trust: Option<Trust>,
    ) -> Result<Self, BackendError> {
        let remote = Arc::new(Remote {
            transport: Transport::new(endpoint, token, trust),
        });
        if let Err(error) = remote.transport.check_tls().await {
            return Err(remote.unavailable(BackendRoute::Describe, &format!("TLS: {error}")));
        }
        let description: Description = remote
            .call(BackendRoute::Describe, &serde_json::json!({}))
            .await?;
        Ok(Self {
            files: RemoteFiles {
                remote: Arc::clone(&remote),
                ranged: description.capabilities.read_range,
            },
            remote,
            served: description.name,
            key_mode: description.key_mode,
            capabilities: description.capabilities,
        })
    }

    /// The name of the backend the server runs (`linux`, `docker`, …).
    pub fn served(&self) -> &str {
        &self.served
    }

    /// The server, `http(s)://HOST:PORT`.
    pub fn endpoint(&self) -> String {
        self.remote.transport.endpoint.to_string()
    }
}

#[async_trait]
impl Backend for RemoteBackend {
    fn name(&self) -> &str {
        REMOTE_NAME
    }

    fn key_mode(&self) -> KeyMode {
        self.key_mode
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn create(&self, req: CreateRequest) -> corral_backend::Result<SandboxInfo> {
        req.validate()?;
        self.remote.call(BackendRoute::Create, &req).await
    }

    async fn find(
        &self,
        key: &corral_backend::SandboxKey,
    ) -> corral_backend::Result<Option<SandboxInfo>> {
        let body = KeyBody { key: key.clone() };
        self.remote.call(BackendRoute::Find, &body).await
    }

    async fn connect(&self, id: &str) -> corral_backend::Result<SandboxInfo> {
        self.remote.call(BackendRoute::Connect, &sandbox(id)).await
    }

    async fn list(&self, labels: &Labels) -> corral_backend::Result<Vec<SandboxInfo>> {
        let body = LabelsBody {
            labels: labels.clone(),
        };
        self.remote.call(BackendRoute::List, &body).await
    }

    async fn destroy(&self, id: &str) -> corral_backend::Result<()> {
        self.remote.call(BackendRoute::Destroy, &sandbox(id)).await
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> corral_backend::Result<ExecOutcome> {
        exec::exec(&self.remote, id, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &self.files
    }

    async fn preview_url(&self, id: &str, port: u16) -> corral_backend::Result<PreviewUrl> {
        let body = PortBody {
            id: id.into(),
            port,
        };
        self.remote.call(BackendRoute::PreviewUrl, &body).await
    }

    async fn native(&self, id: &str) -> corral_backend::Result<serde_json::Value> {
        self.remote.call(BackendRoute::Native, &sandbox(id)).await
    }

    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        self.capabilities.pause.then_some(self as &dyn PauseOps)
    }

    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        self.capabilities
            .snapshot
            .then_some(self as &dyn SnapshotOps)
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        self.capabilities
            .snapshot_clone
            .then_some(self as &dyn SnapshotCloneOps)
    }

    fn usage_ops(&self) -> Option<&dyn UsageOps> {
        self.capabilities.usage.then_some(self as &dyn UsageOps)
    }

    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        self.capabilities
            .list_tree
            .then_some(self as &dyn TreeListOps)
    }

    fn batch_write_ops(&self) -> Option<&dyn BatchWriteOps> {
        self.capabilities
            .write_batch
            .then_some(self as &dyn BatchWriteOps)
    }
}

fn sandbox(id: &str) -> SandboxRef {
    SandboxRef { id: id.into() }
}
