//! # corral-backend-docker
//!
//! The docker backend: every sandbox is one container of a Docker Engine,
//! driven over the Engine API with [`bollard`] through one connection the
//! backend keeps (a unix socket by default, `DOCKER_HOST` honoured).
//!
//! | primitive | how |
//! |---|---|
//! | `create` | a container named `dkr-<hex>` (or `dkr-k<sha256(key)>`) with corral's labels, the requested memory / CPU / pids limits, `--network none` where asked, published loopback ports for previews, `--init` as PID 1 |
//! | `find` / `connect` / `list` | the container name and labels — no database |
//! | `exec` | the exec API, stdin through the attached stream, output streamed; a timeout or abort kills the exec's whole process group inside the container before it settles |
//! | `files` | the archive API (tar in, tar out) for read, write and stat; `mkdir -p` and `rm` through exec |
//! | `read_contained`, `list_tree` | from the host, through the container's overlay2 `MergedDir` with `openat2` — declared only where the engine is local and uses overlay2 |
//! | `snapshot` | `docker commit` into `corral-snapshot:<id>`; the image id (`sha256:…`) is the digest |
//! | `pause` / `resume` | the engine's freezer |
//! | `preview_url` | a port published on `127.0.0.1` |
//!
//! No registry is ever contacted: the default image must already be in the
//! engine (`docker load` or `docker import`; corral's own image store feeds
//! only the linux backend).

pub mod busybox_image;
mod connect;
mod contained;
mod create;
mod error;
mod exec;
mod files;
mod labels;
mod lifecycle;
mod listing;
mod mtime;
mod native;
mod pause;
mod pending;
mod preview;
mod shell;
mod snapshot;

use async_trait::async_trait;
use bollard::Docker;
use corral_backend::{
    Backend, Capabilities, ContainedReadOps, Enforceable, ExecOutcome, ExecRequest, FileOps,
    KeyMode, Labels, OutputSink, PauseOps, PreviewUrl, Result, SandboxInfo, SnapshotCloneOps,
    SnapshotOps, TreeListOps,
};

pub use connect::DEFAULT_IMAGE;
pub use error::map_error;
pub use labels::ID_PREFIX;

/// A backend over one Docker Engine connection.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    docker: Docker,
    image: String,
    local_fs: bool,
    scope: Option<String>,
    files: files::DockerFiles,
    pending: std::sync::Arc<pending::Pending>,
}

impl DockerBackend {
    /// The engine connection.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The image sandboxes start from when a request names none.
    pub fn image(&self) -> &str {
        &self.image
    }

    /// The same engine connection, seeing (and making) only sandboxes and
    /// snapshots labelled with `scope`: a test or a conformance run keeps
    /// to its own on a shared engine.
    pub fn scoped(mut self, scope: &str) -> Result<Self> {
        // The scope is a label value on everything the backend makes.
        corral_backend::Labels::new().with(labels::SCOPE, scope)?;
        if scope.is_empty() {
            return Err(corral_backend::RequestError::Setting {
                name: "scope".into(),
                value: String::new(),
                why: "a scope must not be empty".into(),
            }
            .into());
        }
        self.scope = Some(scope.to_string());
        Ok(self)
    }

    /// The scope given to [`DockerBackend::scoped`], if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether the engine's container files are reachable from this host
    /// (a local engine with overlay2), so contained reads and tree
    /// listings are physical.
    pub fn local_fs(&self) -> bool {
        self.local_fs
    }
}

#[async_trait]
impl Backend for DockerBackend {
    fn name(&self) -> &str {
        "docker"
    }

    fn key_mode(&self) -> KeyMode {
        KeyMode::Exact
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            pause: true,
            snapshot: true,
            snapshot_clone: true,
            terminal: false,
            start_process: false,
            usage: false,
            read_range: false,
            contained_read: self.local_fs,
            list_tree: self.local_fs,
            write_batch: false,
            previews: true,
            reclaim: false,
            port_connect: false,
            run_as_user: false,
            binds: false,
            enforces: Enforceable {
                network_none: true,
                network_allowlist: false,
                cpu: true,
                memory: true,
                disk: false,
                pids: true,
                idle_timeout: false,
                timeout: false,
                bound_to_creator: false,
            },
        }
    }

    async fn create(&self, req: corral_backend::CreateRequest) -> Result<SandboxInfo> {
        create::create(self, req).await
    }

    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        lifecycle::find(self, key).await
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        lifecycle::connect(self, id).await
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        lifecycle::list(self, labels).await
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        lifecycle::destroy(self, id).await
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        exec::exec(self, id, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &self.files
    }

    /// Finishes the removal of every sandbox destroyed through this backend.
    async fn close(&self) -> Result<()> {
        self.pending.finish().await;
        Ok(())
    }

    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        preview::preview_url(self, id, port).await
    }

    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        native::native(self, id).await
    }

    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        Some(self)
    }

    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        Some(self)
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        Some(self)
    }

    fn contained_read_ops(&self) -> Option<&dyn ContainedReadOps> {
        self.local_fs.then_some(self as &dyn ContainedReadOps)
    }

    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        self.local_fs.then_some(self as &dyn TreeListOps)
    }
}
