//! # corral-backend-local
//!
//! The local backend: each sandbox is a directory under a state directory,
//! and commands run as ordinary host processes.
//!
//! **It isolates nothing.** A command runs as the calling user with the
//! host's file system, network and process table; it can read and change
//! anything that user can. The backend is honest about it: it declares no
//! enforcement at all, so `create` refuses `network: none`, an allowlist,
//! every size and process limit, idle and lifetime timeouts, and images with
//! `unsupported` before anything is allocated.
//!
//! What it does provide:
//!
//! - **A path namespace for the file primitives.** Sandbox path `/x/y` is
//!   `<state>/sandboxes/<id>/root/x/y`. Every file primitive resolves its
//!   path beneath `root/` through descriptors, so no symlink and no `..`
//!   reaches outside the sandbox directory (reads use the shared
//!   [`corral_backend::contained`] reads). `/workspace` exists from the
//!   start and is the default working directory and `HOME` of commands.
//!   Absolute paths *inside commands* are host paths (see the exec notes).
//! - **State on disk.** `list`, `find` and `connect` read the state
//!   directory, so another process on the same state directory (the CLI run
//!   again) sees the same sandboxes. Keys are exact across processes (see
//!   `keys`). Nothing is kept only in memory but the handles of live
//!   processes this instance started.
//! - **No process outlives its sandbox.** Every command carries
//!   `CORRAL_SANDBOX=<id>` in its environment (set last: neither the
//!   create-time nor a request's environment can replace it), and children
//!   inherit it. `destroy` and [`LocalBackend::sweep_incomplete`] scan
//!   `/proc` and `SIGKILL` every process holding that marker, or working
//!   beneath the sandbox's directory, whoever started it and whether or not
//!   it left its process group (`setsid`, double forks), repeating until a
//!   scan finds none (bounded at 2 s; what still runs then is a `timeout`
//!   error naming the pids). The honest limit: nothing is isolated, so a
//!   process that both clears its environment *and* moves its working
//!   directory out of the sandbox escapes, as does one of a setuid program
//!   we may not inspect. Where `/proc` is missing, only the live process
//!   groups this instance started are killed (see the `reap` module).
//! - Commands in their own process group (the shared
//!   [`corral_backend::host_exec`] runner), live processes, snapshots
//!   (tar + zstd; ids are `locsnap-<16 hex>`, content checked against its
//!   sha-256 digest before every restore and clone), complete tree listings,
//!   contained reads, ranged reads and disk usage (apparent size).
//! - Crash safety: a sandbox exists once its record is written (last);
//!   `create` rolls back everything on failure, and
//!   [`LocalBackend::sweep_incomplete`] removes what a crashed process left.
//!
//! - Previews of the ports declared at create: since nothing is isolated, a
//!   sandbox port is a host port, and its URL is `http://127.0.0.1:PORT`
//!   (see the `preview` module); `connect_port` reaches any port the same
//!   way, declared or not.
//!
//! It declines honestly what it cannot do: pause, terminals, and atomic
//! batch writes (writes are atomic per file, not across files).

mod beneath;
mod create;
mod exec;
mod files;
mod keys;
mod listing;
mod netns;
mod preview;
mod process;
mod reap;
mod snapshot;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{
    Backend, BackendError, Capabilities, ContainedReadOps, CreateRequest, Enforceable, ExecOutcome,
    ExecRequest, FileOps, KeyMode, Labels, OutputSink, PlatformError, PreviewUrl, ProcessOps,
    ProcessSpec, Result, SandboxInfo, SandboxPath, SnapshotCloneOps, SnapshotInfo, SnapshotOps,
    StartedProcess, TreeListOps, TreeListing, Usage, UsageOps, Verified, labels_match,
};

pub use state::SANDBOX_PREFIX;

use crate::files::LocalFiles;
use crate::process::Registry;
use crate::state::{NAME, State};

/// The local backend. Cheap to clone; clones share the state directory and
/// the registry of live processes.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    state: Arc<State>,
    files: Arc<LocalFiles>,
    processes: Arc<Registry>,
}

impl LocalBackend {
    /// Opens the backend on `state_dir`, creating it and its `sandboxes/`,
    /// `snapshots/` and `keys/` directories as needed.
    pub fn open(state_dir: impl Into<PathBuf>) -> Result<Self> {
        Self::open_verified(state_dir).map(Verified::into_inner)
    }

    /// [`Self::open`], with the proof that the construction check
    /// ([`corral_backend::verify`]) it runs passed, so that whoever
    /// receives the backend need not run it again.
    pub fn open_verified(state_dir: impl Into<PathBuf>) -> Result<Verified<Self>> {
        let dir = state_dir.into();
        let state = State::open(dir).map_err(|e| {
            BackendError::from(PlatformError::Unavailable {
                what: "the local backend cannot use its state directory".into(),
                detail: e.to_string(),
            })
        })?;
        let state = Arc::new(state);
        let backend = LocalBackend {
            files: Arc::new(LocalFiles {
                state: state.clone(),
            }),
            state,
            processes: Arc::new(Registry::default()),
        };
        Verified::new(backend)
    }

    /// The state directory used when none is given: `$CORRAL_STATE_DIR`,
    /// else `$XDG_STATE_HOME/corral`, else `$HOME/.local/state/corral`, else
    /// `/var/lib/corral` (root without a home).
    pub fn default_state_dir() -> PathBuf {
        state::default_state_dir()
    }

    /// The state directory this backend uses.
    pub fn state_dir(&self) -> &Path {
        self.state.dir()
    }

    /// The capabilities on this host: [`Self::CAPABILITIES`], plus
    /// `network: none` where commands can be started in a new, empty network
    /// namespace (see the `netns` module documentation for what that holds
    /// against), and `connect_port` (the `preview` module).
    pub fn capabilities_here(&self) -> Capabilities {
        let mut caps = Self::CAPABILITIES;
        caps.enforces.network_none = netns::no_network().is_some();
        // Its own member, not declared by what merely copies the constant.
        caps.port_connect = true;
        caps
    }

    /// The capabilities of every local backend, whatever the host.
    pub const CAPABILITIES: Capabilities = Capabilities {
        pause: false,
        snapshot: true,
        snapshot_clone: true,
        terminal: false,
        start_process: true,
        usage: true,
        read_range: true,
        contained_read: true,
        list_tree: true,
        write_batch: false,
        previews: true,
        reclaim: true,
        port_connect: false,
        // Commands run as the caller's own host user, whoever is asked for.
        run_as_user: false,
        binds: false,
        enforces: Enforceable {
            network_none: false,
            network_allowlist: false,
            cpu: false,
            memory: false,
            disk: false,
            pids: false,
            idle_timeout: false,
            timeout: false,
            bound_to_creator: false,
        },
    };

    /// Removes what crashed processes left in the state directory:
    /// half-created sandboxes (never listed, never found) and directories of
    /// interrupted destroys, untouched for at least `min_age` so that a
    /// create still running elsewhere is left alone. Every process of such
    /// a sandbox is killed first, as `destroy` does. Returns the ids of the
    /// half-created sandboxes removed.
    pub async fn sweep_incomplete(&self, min_age: std::time::Duration) -> Result<Vec<String>> {
        let state = self.state.clone();
        blocking(move || create::sweep(&state, min_age)).await
    }

    fn state(&self) -> &Arc<State> {
        &self.state
    }
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T, E, F>(f: F) -> Result<T, E>
where
    T: Send + 'static,
    E: From<BackendError> + Send + 'static,
    F: FnOnce() -> Result<T, E> + Send + 'static,
{
    corral_backend::task::blocking("a local backend task did not finish", f).await
}

#[async_trait]
impl Backend for LocalBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn key_mode(&self) -> KeyMode {
        KeyMode::Exact
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities_here()
    }

    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        let state = self.state.clone();
        let caps = self.capabilities_here();
        blocking(move || create::create(&state, &caps, req)).await
    }

    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        let (state, key) = (self.state.clone(), key.clone());
        blocking(move || {
            let Some(id) = keys::owner(&state, &key)? else {
                return Ok(None);
            };
            Ok(state::read_meta(&state, &id)?
                .filter(|m| m.key.as_ref() == Some(&key))
                .map(|m| m.info()))
        })
        .await
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        let (state, id) = (self.state.clone(), id.to_owned());
        blocking(move || Ok(state::require_meta(&state, &id)?.info())).await
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        let (state, labels) = (self.state.clone(), labels.clone());
        blocking(move || {
            Ok(state::list_metas(&state)?
                .into_iter()
                .filter(|m| labels_match(&m.labels, &labels))
                .map(|m| m.info())
                .collect())
        })
        .await
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        self.processes.kill_all(id);
        let (state, id) = (self.state.clone(), id.to_owned());
        blocking(move || create::destroy(&state, &id)).await
    }

    /// Runs `req` as a host process in its own process group. **No
    /// isolation**: the sandbox's paths apply to the working directory only;
    /// absolute paths in the command are host paths.
    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        exec::exec(&self.state, id, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &*self.files
    }

    /// `http://127.0.0.1:PORT` for a port declared at create: **no
    /// isolation**, a sandbox port is a host port (see the `preview` module).
    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        let (state, id) = (self.state.clone(), id.to_owned());
        blocking(move || preview::url(&state, &id, port)).await
    }

    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        let (state, id) = (self.state.clone(), id.to_owned());
        blocking(move || {
            let meta = state::require_meta(&state, &id)?;
            Ok(serde_json::json!({
                "id": meta.id,
                "backend": NAME,
                "root": state.root_dir(&id).to_string_lossy(),
                "created_at_ms": meta.created_at_ms,
                "labels": meta.labels,
            }))
        })
        .await
    }

    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        Some(self)
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        Some(self)
    }

    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        Some(self)
    }

    fn usage_ops(&self) -> Option<&dyn UsageOps> {
        Some(self)
    }

    fn contained_read_ops(&self) -> Option<&dyn ContainedReadOps> {
        Some(self)
    }

    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        Some(self)
    }

    fn reclaim_ops(&self) -> Option<&dyn corral_backend::Reclaim> {
        Some(self)
    }

    fn port_connect_ops(&self) -> Option<&dyn corral_backend::PortConnectOps> {
        Some(self)
    }
}

/// Any port of a sandbox is the host's own (see the `preview` module).
#[async_trait]
impl corral_backend::PortConnectOps for LocalBackend {
    async fn connect_port(&self, id: &str, port: u16) -> Result<corral_backend::BoxedPortStream> {
        let (state, id2) = (self.state.clone(), id.to_owned());
        blocking(move || preview::check_connect(&state, &id2, port)).await?;
        preview::connect(id, port).await
    }
}

/// Reclaim is [`LocalBackend::sweep_incomplete`] with
/// [`RECLAIM_MIN_AGE`]: half-created sandboxes only.
#[async_trait]
impl corral_backend::Reclaim for LocalBackend {
    async fn reclaim(&self) -> Result<corral_backend::ReclaimReport> {
        Ok(corral_backend::ReclaimReport {
            sandboxes: self.sweep_incomplete(RECLAIM_MIN_AGE).await?,
            errors: Vec::new(),
            detail: corral_backend::ReclaimDetail::HalfCreated,
        })
    }
}

/// How long a half-created sandbox must have been untouched for reclaim
/// to take it (the local backend records no creator, so age is its proof
/// that no create is still running).
pub const RECLAIM_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(60);

#[async_trait]
impl SnapshotOps for LocalBackend {
    async fn snapshot(&self, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let (state, id, labels) = (self.state.clone(), id.to_owned(), labels.clone());
        blocking(move || snapshot::capture(&state, &id, &labels)).await
    }

    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        let (state, snap) = (self.state.clone(), snapshot_id.to_owned());
        blocking(move || snapshot::delete(&state, &snap)).await
    }

    async fn list_snapshots(&self, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
        let (state, labels) = (self.state.clone(), labels.clone());
        blocking(move || snapshot::list(&state, &labels)).await
    }
}

#[async_trait]
impl SnapshotCloneOps for LocalBackend {
    async fn clone_snapshot(&self, snapshot_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let (state, snap, labels) = (self.state.clone(), snapshot_id.to_owned(), labels.clone());
        blocking(move || snapshot::clone(&state, &snap, &labels)).await
    }
}

#[async_trait]
impl ProcessOps for LocalBackend {
    async fn start_process(&self, id: &str, spec: ProcessSpec) -> Result<StartedProcess> {
        process::start(&self.state, &self.processes, id, spec).await
    }
}

#[async_trait]
impl UsageOps for LocalBackend {
    async fn usage(&self, id: &str) -> Result<Usage> {
        let (state, id) = (self.state.clone(), id.to_owned());
        blocking(move || listing::usage(&state, &id)).await
    }
}

#[async_trait]
impl TreeListOps for LocalBackend {
    async fn list_tree(
        &self,
        id: &str,
        root: &SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing> {
        let (state, id, root) = (self.state.clone(), id.to_owned(), root.clone());
        blocking(move || listing::list_tree(&state, &id, &root, max_entries)).await
    }
}
