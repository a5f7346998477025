//! `LinuxBackend`: the `Backend` trait over namespaces, a pivoted tmpfs
//! root and our own PID 1.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{
    Backend, BackendError, Capabilities, CreateRequest, Enforcement, ErrorCode, ExecOutcome,
    ExecRequest, FileOps, KeyMode, Labels, OutputSink, PauseOps, PreviewUrl, ProcessOps, Result,
    SandboxInfo, TerminalOps, UsageOps, labels_match,
};

use crate::files::LinuxFiles;
use crate::pause::LinuxPause;
use crate::process::LinuxProcesses;
use crate::state::{NAME, State, info_of, list_metas, require_meta};
use crate::terminal::LinuxTerminals;
use crate::usage::LinuxUsage;

/// The linux backend. Cheap to clone; clones share the state directory.
#[derive(Debug, Clone)]
pub struct LinuxBackend {
    state: Arc<State>,
    files: Arc<LinuxFiles>,
    processes: Arc<LinuxProcesses>,
    pause: Arc<LinuxPause>,
    usage: Arc<LinuxUsage>,
    terminals: Arc<LinuxTerminals>,
}

impl LinuxBackend {
    /// What this backend declares everywhere. It enforces `network: none`
    /// (every sandbox has a fresh network namespace with loopback only) and
    /// the disk limit (the size of the sandbox's tmpfs) and the lifetime
    /// `timeout` (PID 1 kills everything at the deadline, and the host tears
    /// the sandbox down the next time it looks at it). Memory, processes and
    /// CPU are added by [`Self::capabilities_here`] where cgroups are
    /// usable, and `network: allowlist` where `ip`, `nft`, veth pairs and
    /// nf_tables work ([`crate::network::available`]); idle timeouts and
    /// previews are not enforced, so `create` refuses them.
    pub const CAPABILITIES: Capabilities = Capabilities {
        pause: false,
        snapshot: true,
        snapshot_clone: true,
        terminal: true,
        start_process: true,
        usage: false,
        read_range: true,
        contained_read: true,
        list_tree: true,
        write_batch: true,
        previews: false,
        write_creates_parents: false,
        inline_activity: false,
        enforces: Enforcement {
            network_none: true,
            network_allowlist: false,
            cpu: false,
            memory: false,
            disk: true,
            pids: false,
            idle_timeout: false,
            timeout: true,
        },
    };

    /// The capabilities on this host: [`Self::CAPABILITIES`] plus memory,
    /// process and CPU limits, pause/resume and usage when a cgroup
    /// hierarchy was detected, and allowlists when the network machinery
    /// works here (probed once per process).
    pub fn capabilities_here(&self) -> Capabilities {
        let mut caps = Self::CAPABILITIES;
        let cg = self.state.cgroups.is_some();
        caps.enforces.memory = cg;
        caps.enforces.pids = cg;
        caps.enforces.cpu = cg;
        caps.pause = cg;
        caps.usage = cg;
        caps.enforces.network_allowlist = crate::network::available().is_ok();
        caps
    }

    /// Kills by the OOM killer so far in sandbox `id`'s cgroup (`None`
    /// without cgroups). An exec whose command died by `SIGKILL` while this
    /// rose was an out-of-memory kill.
    pub async fn oom_kills(&self, id: &str) -> Result<Option<u64>> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || {
            require_meta(&state, &id)?;
            Ok(crate::exec::oom_kills(&state, &id))
        })
        .await
    }

    /// Opens the backend on `state_dir` (its state lives in `state_dir/linux/`).
    pub fn open(state_dir: impl AsRef<Path>) -> Result<Self> {
        let cgroups = crate::cgroup::Cgroups::detect().ok();
        let state = State::open(state_dir.as_ref(), cgroups).map_err(|e| {
            BackendError::new(
                ErrorCode::Unavailable,
                format!("the linux backend cannot use its state directory: {e}"),
            )
        })?;
        let state = Arc::new(state);
        let backend = LinuxBackend {
            files: Arc::new(LinuxFiles {
                state: state.clone(),
            }),
            processes: Arc::new(LinuxProcesses {
                state: state.clone(),
            }),
            pause: Arc::new(LinuxPause {
                state: state.clone(),
            }),
            usage: Arc::new(LinuxUsage {
                state: state.clone(),
            }),
            terminals: Arc::new(LinuxTerminals {
                state: state.clone(),
            }),
            state,
        };
        corral_backend::verify(&backend)?;
        Ok(backend)
    }

    /// Whether sandboxes can be made on this host; the reason when not.
    pub fn available() -> std::result::Result<(), String> {
        if !rustix::process::geteuid().is_root() {
            return Err(
                "the linux backend needs root (unprivileged user namespaces are not wired yet)"
                    .into(),
            );
        }
        let fs = std::fs::read_to_string("/proc/filesystems")
            .map_err(|e| format!("reading /proc/filesystems: {e}"))?;
        for needed in ["tmpfs", "proc", "devpts"] {
            if !fs
                .lines()
                .any(|l| l.split_whitespace().last() == Some(needed))
            {
                return Err(format!("the kernel has no {needed} file system"));
            }
        }
        if !Path::new("/proc/self/ns/pid").exists() || !Path::new("/proc/self/ns/net").exists() {
            return Err("the kernel has no pid or network namespaces".into());
        }
        if crate::spawn::init_binary().is_none() {
            return Err("the corral-init binary was not found (set CORRAL_INIT)".into());
        }
        Ok(())
    }

    /// Destroys every sandbox of this state directory, complete or
    /// half-made (blocking; for teardown after tests and crash sweeps).
    /// Returns how many were removed.
    pub fn destroy_all(&self) -> Result<usize> {
        let entries = std::fs::read_dir(self.state.sandboxes()).map_err(|e| {
            BackendError::new(
                ErrorCode::Io,
                format!("linux state: listing sandboxes: {e}"),
            )
        })?;
        let mut n = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if crate::state::is_sandbox_id(&name) {
                crate::destroy::destroy(&self.state, &name)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Reclaims what crashed processes left (the `gc` of this backend):
    /// sandboxes whose PID 1 is gone, half-created sandboxes older than
    /// `min_age`, and empty sandbox cgroups without a sandbox. Found by their
    /// labels (the `lnx-` ids naming directories and cgroups) alone.
    /// Returns the ids reclaimed.
    pub async fn sweep_orphans(&self, min_age: std::time::Duration) -> Result<Vec<String>> {
        let state = self.state.clone();
        blocking(move || crate::destroy::sweep(&state, min_age)).await
    }

    /// Garbage collection: reclaims every piece of host state of sandboxes
    /// that are not live — complete ones whose PID 1 is gone, half-made ones
    /// whose creating process is gone — and orphaned init processes, mounts,
    /// cgroups and key claims; spares live sandboxes (see [`crate::gc`] for
    /// how liveness is proven). Idempotent.
    pub async fn gc(&self) -> Result<crate::gc::GcReport> {
        let state = self.state.clone();
        blocking(move || crate::gc::gc(&state)).await
    }

    /// The image store sandboxes are created from (`<state_dir>/linux/images`),
    /// when it could be opened.
    pub fn images(&self) -> Option<&crate::images::ImageStore> {
        self.state.images.as_ref()
    }

    /// The shared state of this backend (for the contract primitives).
    pub(crate) fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Removes snapshots half-built by crashed processes (hidden `.tmp-`
    /// directories of `<state_dir>/linux/snapshots` older than `min_age`);
    /// returns how many. For `gc`.
    pub fn sweep_snapshots(&self, min_age: std::time::Duration) -> usize {
        crate::snapshot::sweep(&self.state, min_age)
    }

    /// The state directory of this backend (`<state_dir>/linux`).
    pub fn state_dir(&self) -> &Path {
        self.state.dir()
    }
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::new(ErrorCode::Provider, format!("linux backend task: {e}")))?
}

#[async_trait]
impl Backend for LinuxBackend {
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
        blocking(move || crate::create::create(&state, &caps, req)).await
    }

    async fn find(&self, key: &str) -> Result<Option<SandboxInfo>> {
        let state = self.state.clone();
        let key = key.to_string();
        blocking(move || {
            Ok(list_metas(&state)?
                .into_iter()
                .find(|m| m.key.as_deref() == Some(key.as_str()))
                .map(|m| info_of(&state, &m)))
        })
        .await
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || require_meta(&state, &id).map(|m| info_of(&state, &m))).await
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        let state = self.state.clone();
        let labels = labels.clone();
        blocking(move || {
            Ok(list_metas(&state)?
                .into_iter()
                .filter(|m| labels_match(&m.labels, &labels))
                .map(|m| info_of(&state, &m))
                .collect())
        })
        .await
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || crate::destroy::destroy(&state, &id)).await
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        req.validate()?;
        let state = self.state.clone();
        let id2 = id.to_string();
        let meta = blocking(move || {
            let meta = require_meta(&state, &id2)?;
            if crate::pause::is_paused(&state, &id2) {
                return Err(BackendError::new(
                    ErrorCode::Conflict,
                    format!("sandbox {id2} is paused"),
                ));
            }
            Ok(meta)
        })
        .await?;
        crate::exec::run(&self.state, &meta, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &*self.files
    }

    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        Some(&*self.processes)
    }

    fn snapshot_ops(&self) -> Option<&dyn corral_backend::SnapshotOps> {
        Some(self)
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn corral_backend::SnapshotCloneOps> {
        Some(self)
    }

    fn contained_read_ops(&self) -> Option<&dyn corral_backend::ContainedReadOps> {
        Some(self)
    }

    fn tree_list_ops(&self) -> Option<&dyn corral_backend::TreeListOps> {
        Some(self)
    }

    fn batch_write_ops(&self) -> Option<&dyn corral_backend::BatchWriteOps> {
        Some(self)
    }

    fn terminal_ops(&self) -> Option<&dyn TerminalOps> {
        Some(&*self.terminals)
    }

    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        self.state
            .cgroups
            .as_ref()
            .map(|_| &*self.pause as &dyn PauseOps)
    }

    fn usage_ops(&self) -> Option<&dyn UsageOps> {
        self.state
            .cgroups
            .as_ref()
            .map(|_| &*self.usage as &dyn UsageOps)
    }

    async fn preview_url(&self, _id: &str, _port: u16) -> Result<PreviewUrl> {
        Err(BackendError::unsupported(NAME, "publish ports (previews)"))
    }

    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || {
            let m = require_meta(&state, &id)?;
            Ok(serde_json::json!({
                "id": m.id,
                "init_pid": m.init_pid,
                "disk_bytes": m.disk_bytes,
                "image": m.image,
                "hostname": m.id,
            }))
        })
        .await
    }
}
