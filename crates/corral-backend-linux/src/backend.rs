//! `LinuxBackend`: the `Backend` trait over namespaces, a pivoted tmpfs
//! root and our own PID 1.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use corral_backend::{
    Backend, BackendError, Capabilities, CreateRequest, Enforceable, ExecOutcome, ExecRequest,
    FileOps, KeyMode, Labels, OutputSink, PauseOps, PlatformError, PreviewUrl, ProcessOps,
    RequestError, Result, SandboxError, SandboxInfo, TerminalOps, UsageOps, Verified, labels_match,
};

use crate::blocking::blocking;
use crate::files::LinuxFiles;
use crate::pause::LinuxPause;
use crate::process::LinuxProcesses;
use crate::spawn::pool::Pool;
use crate::state::{NAME, State, info_of, is_paused, list_metas, require_meta};
use crate::terminal::LinuxTerminals;
use crate::usage::LinuxUsage;

/// How long [`LinuxBackend::destroy_all`] waits for reapers in flight.
const REAPERS_WAIT: Duration = Duration::from_secs(30);

/// Waits for the reapers of `state`'s destroys, finishing the entries of
/// gone ones, at most [`REAPERS_WAIT`] (blocking): once it returns `Ok`,
/// nothing of a destroyed sandbox is mounted, so the state directory may be
/// removed.
fn settle_reapers(state: &State) -> Result<()> {
    if crate::reaping::wait_empty(state, REAPERS_WAIT, true) {
        return Ok(());
    }
    let busy = std::io::Error::from(std::io::ErrorKind::TimedOut);
    let what = format!(
        "linux state: destroyed sandboxes were still being finished after {REAPERS_WAIT:?} \
         (`corral gc` finishes them)"
    );
    Err(PlatformError::io(what, &busy).into())
}

/// The linux backend. Cheap to clone; clones share the state directory.
#[derive(Debug, Clone)]
pub struct LinuxBackend {
    state: Arc<State>,
    /// Inits started ahead of demand, each in its own cgroup.
    pool: Arc<Pool>,
    default_timeout: Duration,
    files: Arc<LinuxFiles>,
    processes: Arc<LinuxProcesses>,
    pause: Arc<LinuxPause>,
    usage: Arc<LinuxUsage>,
    terminals: Arc<LinuxTerminals>,
}

impl LinuxBackend {
    /// What this backend declares everywhere. It enforces `network: none`
    /// (every sandbox has a fresh network namespace with loopback only) and
    /// the disk limit (the size of the sandbox's writable layer) and the lifetime
    /// `timeout` (PID 1 kills everything at the deadline; from then on the
    /// sandbox is `not_found` to every caller, and [`Self::gc`] or
    /// [`Backend::destroy`] reclaims what it held). Memory, processes and
    /// CPU are added by [`Self::capabilities_here`] where cgroups are
    /// usable, and `network: allowlist` where `ip`, `nft`, veth pairs and
    /// nf_tables work ([`crate::network::available`]). Previews: each
    /// declared port is forwarded from an ephemeral port on the host's
    /// loopback ([`crate::preview`]). Idle timeouts are not enforced, so
    /// `create` refuses them.
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
        previews: true,
        reclaim: true,
        port_connect: false,
        run_as_user: true,
        binds: true,
        enforces: Enforceable {
            network_none: true,
            network_allowlist: false,
            cpu: false,
            memory: false,
            disk: true,
            pids: false,
            idle_timeout: false,
            timeout: true,
            bound_to_creator: true,
        },
    };

    /// The capabilities on this host: [`Self::CAPABILITIES`] plus memory,
    /// process and CPU limits, pause/resume and usage when a cgroup
    /// hierarchy was detected, allowlists when the network machinery
    /// works here (probed at most once per boot: [`crate::network::available`];
    /// never for an ordinary user, who cannot enforce them), and `connect_port` (any port,
    /// declared or not, through `crate::port`), `run_as_user` and binds
    /// of host directories unless rootless.
    pub fn capabilities_here(&self) -> Capabilities {
        let mut caps = Self::CAPABILITIES;
        let cg = self.state.cgroups.is_some();
        caps.enforces.memory = cg;
        caps.enforces.pids = cg;
        caps.enforces.cpu = cg;
        caps.pause = cg;
        caps.usage = cg;
        caps.enforces.network_allowlist =
            !self.state.rootless && crate::network::available().is_ok();
        caps.port_connect = !self.state.rootless;
        caps.run_as_user = self.state.runs_as_user();
        if self.state.rootless {
            // What needs privileges an ordinary user cannot get.
            caps.enforces.network_allowlist = false;
            caps.previews = false;
            caps.snapshot = false;
            caps.snapshot_clone = false;
            // A bind needs privilege over the host's mount namespace.
            caps.binds = false;
        }
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
    /// The default exec wall-clock limit is [`crate::DEFAULT_EXEC_TIMEOUT`], or
    /// what [`crate::DEFAULT_TIMEOUT_ENV`] says when it is set (a malformed value
    /// is refused with `invalid_input`).
    pub fn open(state_dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_verified(state_dir).map(Verified::into_inner)
    }

    /// [`Self::open`], with the proof that the construction check
    /// ([`corral_backend::verify`]) it runs passed, so that whoever
    /// receives the backend need not run it again.
    pub fn open_verified(state_dir: impl AsRef<Path>) -> Result<Verified<Self>> {
        Self::open_with_layers(state_dir.as_ref(), crate::layers::Layers::all())
    }

    /// Opens the backend as [`Self::open`] does, but without the isolation
    /// layers `without` — for measuring what each costs (the bench's
    /// `linux without <layer>` rows), never for running untrusted code.
    pub fn open_measuring(
        state_dir: impl AsRef<Path>,
        without: &[crate::layers::Layer],
    ) -> Result<Self> {
        Self::open_with_layers(state_dir.as_ref(), crate::layers::Layers::without(without))
            .map(Verified::into_inner)
    }

    fn open_with_layers(state_dir: &Path, layers: crate::layers::Layers) -> Result<Verified<Self>> {
        let default_timeout = crate::exec_timeout::from_env()?;
        // Rootless, no cgroup can be made (nor delegated) for a sandbox.
        let cgroups = match crate::userns::rootless::active() {
            true => None,
            false => crate::cgroup::Cgroups::detect().ok(),
        };
        let pool = Arc::new(Pool::new(cgroups.clone()));
        // The real host: the one place it is chosen (tests choose another).
        let host = Arc::new(crate::real_host::RealHost);
        let mut state =
            State::open(state_dir, cgroups, host).map_err(|e| PlatformError::Unavailable {
                what: "the linux backend cannot use its state directory".into(),
                detail: e.to_string(),
            })?;
        state.layers = layers;
        pool.set_descriptor_hygiene(layers.on(crate::layers::Layer::DescriptorHygiene));
        pool.set_user_namespace(
            (layers.on(crate::layers::Layer::UserNamespace) && !state.rootless)
                .then(|| crate::userns::ranges::dir(state.dir())),
        );
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
            pool,
            default_timeout,
        };
        Verified::new(backend)
    }

    /// The same backend with `limit` as the wall-clock limit of every exec
    /// whose request sets no `timeout` (instead of [`crate::DEFAULT_EXEC_TIMEOUT`]
    /// or [`crate::DEFAULT_TIMEOUT_ENV`]); a zero limit is refused.
    pub fn with_default_exec_timeout(mut self, limit: Duration) -> Result<Self> {
        if limit.is_zero() {
            return Err(RequestError::Setting {
                name: "default exec timeout".into(),
                value: format!("{limit:?}"),
                why: "a zero limit would time out every command".into(),
            }
            .into());
        }
        self.default_timeout = limit;
        Ok(self)
    }

    /// The wall-clock limit of an exec whose request sets no `timeout`.
    pub fn default_exec_timeout(&self) -> Duration {
        self.default_timeout
    }

    /// Whether sandboxes can be made on this host; the reason when not.
    /// As an ordinary user that needs a host that lets it make a user
    /// namespace (probed once, in a forked child): the backend then runs
    /// rootless ([`crate::userns::rootless`]).
    pub fn available() -> std::result::Result<(), String> {
        if crate::userns::rootless::active() {
            crate::userns::rootless::probe()?;
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
    /// half-made, live or not (blocking; for the teardown after tests),
    /// each finished before this returns, and waits for the reapers of
    /// earlier destroys (finishing what a gone one left): once it returns
    /// nothing of this state directory's sandboxes is mounted, so the
    /// directory may be removed. Returns how many were removed. This is
    /// [`Backend::destroy`] of each one, not a reclaim: what crashes left
    /// is [`Self::gc`]'s.
    pub fn destroy_all(&self) -> Result<usize> {
        let entries = std::fs::read_dir(self.state.sandboxes())
            .map_err(|e| crate::state::state_error("listing sandboxes", &e))?;
        let mut n = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if crate::state::is_sandbox_id(&name) {
                crate::destroy::destroy_here(&self.state, &name)?;
                n += 1;
            }
        }
        settle_reapers(&self.state)?;
        Ok(n)
    }

    /// Waits until every sandbox this state directory destroyed is
    /// finished — its writable layer detached, its disk image, directory
    /// and cgroup removed — by its reaper (or by a [`Self::gc`] pass, for
    /// one whose reaper is gone), polling at most `limit` (blocking):
    /// whether they all were. A destroy answers before that work
    /// (`crate::reaping`); this is for callers that must see the host
    /// clean, such as tests.
    pub fn wait_reaped(&self, limit: Duration) -> bool {
        crate::reaping::wait_empty(&self.state, limit, false)
    }

    /// Garbage collection, the one reclaim pass of this backend: every
    /// piece of host state of sandboxes that are not live — complete ones
    /// whose PID 1 is gone or whose lifetime is over, half-made ones whose
    /// creating process is gone — and orphaned init processes, mounts,
    /// cgroups, key claims and half-built snapshots; live sandboxes and
    /// snapshots being built are spared ([`crate::gc`] writes down the
    /// rules). Idempotent.
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

    /// The state directory of this backend (`<state_dir>/linux`).
    pub fn state_dir(&self) -> &Path {
        self.state.dir()
    }
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

    /// The safe defaults create applies (the cgroup's CPU and memory where
    /// cgroups are usable, the writable layer's size always).
    fn default_size(&self) -> corral_backend::Size {
        let enforces = self.capabilities_here().enforces;
        let cgroup = crate::cgroup::CgroupLimits::safe_defaults();
        corral_backend::Size {
            cpus: cgroup
                .cpu_millicores
                .filter(|_| enforces.cpu)
                .map(|m| m as f64 / 1000.0),
            memory_bytes: cgroup.memory_bytes.filter(|_| enforces.memory),
            disk_bytes: Some(crate::DEFAULT_DISK_BYTES).filter(|_| enforces.disk),
        }
    }

    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        if let corral_backend::Network::Allowlist { destinations } = &req.network {
            crate::network::check(destinations)
                .map_err(|e| e.into_backend(crate::network::Phase::Check))?;
        }
        let (state, pool) = (self.state.clone(), self.pool.clone());
        let caps = self.capabilities_here();
        blocking(move || crate::create::create(&state, &pool, &caps, req)).await
    }

    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        let state = self.state.clone();
        let key = key.clone();
        blocking(move || {
            Ok(list_metas(&state)?
                .into_iter()
                .find(|m| m.key.as_ref() == Some(&key))
                .and_then(|m| info_of(&state, &m)))
        })
        .await
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || {
            let meta = require_meta(&state, &id)?;
            info_of(&state, &meta).ok_or_else(|| BackendError::sandbox_not_found(&id))
        })
        .await
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        let state = self.state.clone();
        let labels = labels.clone();
        blocking(move || {
            Ok(list_metas(&state)?
                .into_iter()
                .filter(|m| labels_match(&m.labels, &labels))
                .filter_map(|m| info_of(&state, &m))
                .collect())
        })
        .await
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || crate::destroy::destroy(&state, &id)).await
    }

    /// Waits for the reapers of this backend's destroys (finishing the
    /// entry of one that is gone), bounded: once it returns, nothing of a
    /// destroyed sandbox is mounted and the state directory may be removed.
    /// A process that exits without closing leaves its reapers running.
    async fn close(&self) -> Result<()> {
        let state = self.state.clone();
        blocking(move || settle_reapers(&state)).await
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        self.state.check_run_as(req.run_as)?;
        let state = self.state.clone();
        let id2 = id.to_string();
        let meta = blocking(move || {
            let meta = require_meta(&state, &id2)?;
            if is_paused(&state, &id2) {
                return Err(BackendError::from(SandboxError::Paused { id: id2 }));
            }
            Ok(meta)
        })
        .await?;
        crate::exec::run(&self.state, &meta, req, self.default_timeout, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &*self.files
    }

    /// Where the sandbox's user exists (not rootless).
    fn owned_write_ops(&self) -> Option<&dyn corral_backend::OwnedWriteOps> {
        self.state
            .runs_as_user()
            .then_some(self.files.as_ref() as &dyn corral_backend::OwnedWriteOps)
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

    fn reclaim_ops(&self) -> Option<&dyn corral_backend::Reclaim> {
        Some(self)
    }

    fn port_connect_ops(&self) -> Option<&dyn corral_backend::PortConnectOps> {
        (!self.state.rootless).then_some(self as &dyn corral_backend::PortConnectOps)
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

    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        let state = self.state.clone();
        let id = id.to_string();
        blocking(move || {
            let meta = require_meta(&state, &id)?;
            crate::preview::url(&state, &meta, port)
        })
        .await
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
                "previews": crate::preview::host_ports(&state.sandbox_dir(&m.id)),
                "init_oom_shield": crate::spawn::oom::shield_failure().unwrap_or("on"),
            }))
        })
        .await
    }
}

/// Connections into the sandbox's own network namespace (`crate::port`).
#[async_trait]
impl corral_backend::PortConnectOps for LinuxBackend {
    async fn connect_port(&self, id: &str, port: u16) -> Result<corral_backend::BoxedPortStream> {
        crate::port::connect(self.state.clone(), id, port).await
    }
}

/// Reclaim is [`LinuxBackend::gc`]: every piece of host state of the
/// sandboxes that are not live.
#[async_trait]
impl corral_backend::Reclaim for LinuxBackend {
    async fn reclaim(&self) -> Result<corral_backend::ReclaimReport> {
        Ok(self.gc().await?.into())
    }
}
