//! # corral-backend-memory
//!
//! A deterministic, in-memory [`Backend`]: the oracle the contract's
//! conformance speaks of, and the reference every other backend's behaviour
//! is compared with. Nothing here touches the host: each sandbox is a file
//! tree in memory plus a small built-in shell whose "processes" are tokio
//! tasks.
//!
//! **It isolates nothing.** It declares every optional member and every
//! [`Enforceable`] because it *simulates* them faithfully enough for tests of
//! the layers above; it must never stand in for a real sandbox.
//!
//! ## Determinism
//!
//! Sandbox ids are `mem-1`, `mem-2`, … and snapshot ids `memsnap-1`, …, in
//! creation order. Times come from an injectable [`Clock`]
//! ([`ManualClock`] in tests). Commands are the built-ins listed below, so
//! their output never depends on the host.
//!
//! ## Simulated enforcement
//!
//! | Request | What the memory backend does |
//! |---|---|
//! | `network: none` | recorded; the built-in `curl` fails (exit 7) for every destination |
//! | `network: allowlist` | recorded; `curl` reaches only the listed `host:port` pairs, others fail (exit 7) |
//! | `size.disk_bytes` | enforced: writes that would make files hold more bytes fail (`quota`, or `No space left on device` in the shell) |
//! | `limits.pids` | enforced: starting a simulated process (exec, pipeline stage, `&` job, live process) beyond the limit fails (`quota`, or a `fork` error in the shell) |
//! | `timeout`, `idle_timeout` | enforced against the clock: from the moment it expires a sandbox answers `not_found` and is absent from `find` and `list`; reads change nothing, so it is removed (its processes ended) by the next `create` or `destroy` |
//! | `size.cpus`, `size.memory_bytes` | recorded only (shown by [`Backend::native`]); the built-ins cannot exceed them meaningfully |
//!
//! ## The shell
//!
//! `exec` runs an argv or an `sh -c` script with the built-ins `echo [-n]`,
//! `printf` (`%s %d %i %c %x %o %%`, widths, `\n \t` escapes), `cat`, `true`,
//! `false`, `:`, `exit`, `sleep` (fractional seconds, tokio's timer),
//! `pwd`, `cd`, `ls [-aA]`, `mkdir [-p]`, `rm [-rRf]`, `touch`, `test`/`[`
//! (`-e -f -d -s -x -L -p -n -z`, `= != -eq -ne -lt -le -gt -ge`, `!`),
//! `env`, `export`, `unset`, `read`, `ln -s`, `mkfifo`, `wc [-lwc]`,
//! `head [-c N|-n N]`, `yes`, `kill`, `wait`, `setsid [-f]`, `curl`
//! (simulated; `-o /dev/null` and `-w '%{http_code}'`) and `sh` (also
//! named `bash`; `-l` is accepted and reads no profile).
//! Scripts support `;`, `&&`, `||`, `|`, `&`, `( … )`, `{ …; }`,
//! redirections, quoting, `$VAR`/`${VAR}`/`$?`/`$1`/`$@`/`$$`/`$!`, and
//! comments; not command substitution, here-documents, globbing, or control
//! structures. An unknown command exits 127 with `sh: NAME: not found`.
//!
//! Every exec, live process and terminal owns a process group: when its
//! leader ends, on timeout and on abort, everything it started (background
//! jobs included) is cancelled before the call settles. Use `wait` in a
//! script to keep background jobs' work, or `setsid` to start a new process
//! group that no exec owns (it outlives the exec; its id is the pid of its
//! first task). Pids are per sandbox, from 2 up; `kill PID` reaches any
//! simulated process of the sandbox, `kill -SIG -PGID` a `setsid` group, and every
//! signal but 0 ends it (nothing installs handlers). A pipeline writer whose
//! reader is gone ends with status 141. A CPU-bound built-in (`yes` into
//! `/dev/null`) never lets a paused tokio clock auto-advance.
//!
//! ## Files
//!
//! `/workspace` and `/tmp` exist at create. Paths are normalized lexically
//! ([`corral_backend::sandbox_path`]); symlinks met on the way are
//! followed physically (40 hops at most). `files.write` needs the parent to
//! exist (the SDK core makes it) and, like a write-then-rename,
//! replaces a final symlink instead of writing through it; `mode` defaults
//! to `0o644`. `write_batch` applies the same writes to a copy of the tree and
//! publishes it only if all succeeded. [`MemoryBackend::symlink`],
//! [`MemoryBackend::mkfifo`] and [`MemoryBackend::mknod`] create what the
//! primitives cannot. Contained reads resolve inside the tree the way
//! `corral_backend::contained` resolves on a host: `path` must lie under
//! `allowed_root`, absolute symlink targets and `..` above the root are
//! `outside_root`, anything but a regular file is `not_regular_file`.
//!
//! ## Pause, snapshots, live processes, terminals
//!
//! A paused sandbox refuses exec, `start_process` and terminals with
//! `conflict`; running commands freeze at their next read, write or
//! command until `resume`. Snapshots deep-copy the tree; their digest is the
//! sha256 of a canonical serialization (paths sorted, types, modes,
//! contents, never mtimes), so equal trees have equal digests. Live
//! processes get in-memory duplex pipes (stdin half-closes, stdout and
//! stderr end in EOF when the group is gone). A terminal without a command
//! is a simulated interactive shell printing a `$ ` prompt (no echo), where
//! `SIGINT` interrupts the running line.

mod clock;
mod contained;
mod exec;
mod files;
mod fs_error;
mod listing;
mod process;
mod procs;
mod sandbox;
mod shell;
mod snapshot;
mod terminal;
mod tree;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use corral_backend::{
    Backend, BackendError, BatchWriteOps, Capabilities, ContainedReadOps, CreateError,
    CreateRequest, Enforceable, ExecOutcome, ExecRequest, FileOps, KeyMode, Labels, OutputSink,
    PauseOps, PreviewError, PreviewUrl, ProcessOps, RequestError, Result, SandboxInfo, SandboxKey,
    SnapshotCloneOps, SnapshotError, SnapshotOps, TerminalOps, TreeListOps, UsageOps,
    check_enforceable, labels_match,
};

pub use clock::{Clock, ManualClock, SystemClock};
pub use tree::SpecialKind;

use crate::procs::lock;
use crate::sandbox::{NewSandbox, Sandbox};
use crate::tree::Tree;

/// The backend's name.
pub(crate) const NAME: &str = "memory";

/// What every sandbox id starts with (`mem-1`, `mem-2`, …).
pub const SANDBOX_PREFIX: &str = "mem-";

/// The in-memory backend. Cheap to clone: clones share the same sandboxes.
#[derive(Clone)]
pub struct MemoryBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner.state);
        f.debug_struct("MemoryBackend")
            .field("sandboxes", &st.sandboxes.len())
            .field("snapshots", &st.snapshots.len())
            .finish_non_exhaustive()
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

/// Everything the backend holds; every primitive trait is implemented on it.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) state: Mutex<State>,
}

/// The sandboxes and snapshots.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Expired ones included, until [`State::sweep`]: read them through
    /// [`State::live`] and [`State::all_live`].
    sandboxes: BTreeMap<String, Arc<Sandbox>>,
    /// By creation number.
    pub(crate) snapshots: BTreeMap<u64, snapshot::Stored>,
    next_sandbox: u64,
    pub(crate) next_snapshot: u64,
    /// The image names a create may ask for ([`MemoryBackend::with_image`]).
    images: BTreeSet<String>,
}

impl State {
    /// The sandbox `id` unless it is missing or expired at `now`.
    fn live(&self, id: &str, now: u64) -> Option<&Arc<Sandbox>> {
        self.sandboxes.get(id).filter(|sb| !sb.expired(now))
    }

    /// Every sandbox not expired at `now`, in id order.
    fn all_live(&self, now: u64) -> impl Iterator<Item = &Arc<Sandbox>> {
        self.sandboxes.values().filter(move |sb| !sb.expired(now))
    }

    /// Destroys every sandbox whose `timeout` or `idle_timeout` passed.
    /// Only the calls that change which sandboxes exist (`create`,
    /// `destroy`) run it: a read sees an expired sandbox as gone and
    /// leaves it be.
    fn sweep(&mut self, now: u64) {
        self.sandboxes.retain(|_, sb| {
            let expired = sb.expired(now);
            if expired {
                sb.procs.abort_all();
            }
            !expired
        });
    }
}

impl Inner {
    /// The state, locked, as it is: nothing is swept.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The live sandbox `id` (`not_found` when it is missing or expired),
    /// touched: every call on a sandbox counts as activity for its
    /// `idle_timeout`.
    pub(crate) fn sandbox(&self, id: &str) -> Result<Arc<Sandbox>> {
        let st = self.state();
        let sb = st
            .live(id, self.clock.now_ms())
            .cloned()
            .ok_or_else(|| BackendError::sandbox_not_found(id))?;
        drop(st);
        sb.touch();
        Ok(sb)
    }
}

impl MemoryBackend {
    /// A backend on the wall clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// A backend reading time from `clock` (a [`ManualClock`] in tests).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        MemoryBackend {
            inner: Arc::new(Inner {
                clock,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The backend with one more image a create may name. An image here is
    /// a name and nothing else: a sandbox made from it starts with the same
    /// tree as any other. A create naming an image not given here fails
    /// with `not_found` rather than pretending to hold it.
    #[must_use]
    pub fn with_image(self, name: impl Into<String>) -> Self {
        self.inner.state().images.insert(name.into());
        self
    }

    /// The clock this backend reads.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.inner.clock)
    }
}

/// What the memory backend declares: everything, simulated (see the crate docs).
pub(crate) const CAPABILITIES: Capabilities = Capabilities {
    pause: true,
    snapshot: true,
    snapshot_clone: true,
    terminal: true,
    start_process: true,
    usage: true,
    read_range: true,
    contained_read: true,
    list_tree: true,
    write_batch: true,
    previews: true,
    reclaim: false,
    port_connect: false,
    // The simulated shell has no users or permissions to tell them apart.
    run_as_user: false,
    binds: false,
    enforces: Enforceable::ALL,
};

#[async_trait]
impl Backend for MemoryBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn key_mode(&self) -> KeyMode {
        KeyMode::Exact
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        req.validate()?;
        check_enforceable(NAME, &CAPABILITIES, &req)?;
        let now = self.inner.clock.now_ms();
        let mut st = self.inner.state();
        st.sweep(now);
        if let Some(key) = &req.key
            && let Some(holder) = st.sandboxes.values().find(|s| s.key.as_ref() == Some(key))
        {
            return Err(CreateError::KeyTaken {
                key: key.to_string(),
                owner: Some(holder.id.clone()),
            }
            .into());
        }
        if let Some(image) = &req.image
            && !st.images.contains(image)
        {
            return Err(CreateError::ImageNotFound {
                image: image.clone(),
                hint: "the memory backend holds only the images it was opened with \
                       (`MemoryBackend::with_image`)"
                    .into(),
            }
            .into());
        }
        let tree = match &req.snapshot {
            None => Tree::new(now),
            Some(sid) => {
                let mut tree = st
                    .snapshots
                    .values()
                    .find(|s| s.info.id == *sid)
                    .map(|s| s.tree.clone())
                    .ok_or_else(|| {
                        BackendError::from(SnapshotError::NotFound {
                            snapshot: sid.clone(),
                        })
                    })?;
                tree.ensure_standard_dirs(now);
                if let Some(limit) = req.size.disk_bytes
                    && tree.stored_bytes() > limit
                {
                    return Err(CreateError::SnapshotTooLarge {
                        snapshot: sid.clone(),
                        limit,
                    }
                    .into());
                }
                tree
            }
        };
        st.next_sandbox += 1;
        let seq = st.next_sandbox;
        let id = format!("{SANDBOX_PREFIX}{seq}");
        let sb = Arc::new(Sandbox::new(NewSandbox {
            seq,
            id: id.clone(),
            req,
            tree,
            clock: Arc::clone(&self.inner.clock),
        }));
        let info = sb.info();
        st.sandboxes.insert(id, sb);
        Ok(info)
    }

    async fn find(&self, key: &SandboxKey) -> Result<Option<SandboxInfo>> {
        let st = self.inner.state();
        Ok(st
            .all_live(self.inner.clock.now_ms())
            .find(|s| s.key.as_ref() == Some(key))
            .map(|s| s.info()))
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        Ok(self.inner.sandbox(id)?.info())
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        let st = self.inner.state();
        let mut found: Vec<&Arc<Sandbox>> = st
            .all_live(self.inner.clock.now_ms())
            .filter(|s| labels_match(&s.labels, labels))
            .collect();
        found.sort_by_key(|s| s.seq);
        Ok(found.into_iter().map(|s| s.info()).collect())
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        let removed = {
            // `id` first, expired or not, so its processes are waited for.
            let mut st = self.inner.state();
            let removed = st.sandboxes.remove(id);
            st.sweep(self.inner.clock.now_ms());
            removed
        };
        if let Some(sb) = removed {
            sb.procs.kill_all().await;
        }
        Ok(())
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        exec::run(&self.inner, id, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &*self.inner
    }

    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        if port == 0 {
            return Err(RequestError::PortZero.into());
        }
        let sb = self.inner.sandbox(id)?;
        if !sb.ports.contains(&port) {
            return Err(PreviewError::PortNotDeclared {
                id: id.into(),
                port,
                declared: sb.ports.clone(),
            }
            .into());
        }
        Ok(PreviewUrl {
            url: format!("memory://{id}:{port}"),
            headers: BTreeMap::new(),
            expires_at_ms: sb.expires_at_ms,
        })
    }

    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        Ok(self.inner.sandbox(id)?.native())
    }

    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        Some(&*self.inner)
    }

    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        Some(&*self.inner)
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        Some(&*self.inner)
    }

    fn terminal_ops(&self) -> Option<&dyn TerminalOps> {
        Some(&*self.inner)
    }

    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        Some(&*self.inner)
    }

    fn usage_ops(&self) -> Option<&dyn UsageOps> {
        Some(&*self.inner)
    }

    fn contained_read_ops(&self) -> Option<&dyn ContainedReadOps> {
        Some(&*self.inner)
    }

    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        Some(&*self.inner)
    }

    fn batch_write_ops(&self) -> Option<&dyn BatchWriteOps> {
        Some(&*self.inner)
    }
}
