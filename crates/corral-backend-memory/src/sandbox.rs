//! One in-memory sandbox: its record, its file tree, its processes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use corral_backend::Environment;
use corral_backend::contained_fs::FileOp;
use corral_backend::{
    ExecError, Labels, Limits, Network, Result, SandboxError, SandboxInfo, SandboxStatus, Size,
};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::procs::{Procs, lock};
use crate::tree::{FsError, Node, Tree};

/// A sandbox of the memory backend.
#[derive(Debug)]
pub(crate) struct Sandbox {
    /// Creation order, for listings.
    pub(crate) seq: u64,
    pub(crate) id: String,
    pub(crate) key: Option<corral_backend::SandboxKey>,
    pub(crate) labels: Labels,
    pub(crate) created_at_ms: u64,
    pub(crate) expires_at_ms: Option<u64>,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) last_active_ms: AtomicU64,
    pub(crate) env: Environment,
    pub(crate) network: Network,
    pub(crate) size: Size,
    pub(crate) limits: Limits,
    pub(crate) ports: Vec<u16>,
    pub(crate) image: Option<String>,
    pub(crate) from_snapshot: Option<String>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) procs: Arc<Procs>,
    tree: Mutex<Tree>,
    paused: watch::Sender<bool>,
}

/// Everything `create` decided, to build a [`Sandbox`] from.
#[derive(Debug)]
pub(crate) struct NewSandbox {
    pub(crate) seq: u64,
    pub(crate) id: String,
    pub(crate) req: corral_backend::CreateRequest,
    pub(crate) tree: Tree,
    pub(crate) clock: Arc<dyn Clock>,
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Sandbox {
    pub(crate) fn new(n: NewSandbox) -> Sandbox {
        let now = n.clock.now_ms();
        let req = n.req;
        Sandbox {
            seq: n.seq,
            id: n.id,
            key: req.key,
            labels: req.labels,
            created_at_ms: now,
            expires_at_ms: req.timeout.map(|t| now.saturating_add(ms(t))),
            idle_timeout_ms: req.idle_timeout.map(ms),
            last_active_ms: AtomicU64::new(now),
            env: req.env,
            network: req.network,
            size: req.size,
            procs: Procs::new(req.limits.pids),
            limits: req.limits,
            ports: req.ports,
            image: req.image,
            from_snapshot: req.snapshot,
            clock: n.clock,
            tree: Mutex::new(n.tree),
            paused: watch::Sender::new(false),
        }
    }

    /// Now, by the backend's clock.
    pub(crate) fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Whether the sandbox's `timeout` or `idle_timeout` has passed at `now`.
    pub(crate) fn expired(&self, now: u64) -> bool {
        if self.expires_at_ms.is_some_and(|t| now >= t) {
            return true;
        }
        let last = self.last_active_ms.load(Ordering::SeqCst);
        self.idle_timeout_ms
            .is_some_and(|idle| now >= last.saturating_add(idle))
    }

    /// Records activity now.
    pub(crate) fn touch(&self) {
        self.last_active_ms.fetch_max(self.now(), Ordering::SeqCst);
    }

    /// The file tree, locked.
    pub(crate) fn tree(&self) -> MutexGuard<'_, Tree> {
        lock(&self.tree)
    }

    /// `size.disk_bytes`, the cap on bytes held by files.
    pub(crate) fn disk_limit(&self) -> Option<u64> {
        self.size.disk_bytes
    }

    /// Writes a file as the backend and the shell do (mtime now, disk limit).
    pub(crate) fn write_file(
        &self,
        comps: &[String],
        bytes: &[u8],
        mode: Option<u32>,
        append: bool,
    ) -> std::result::Result<(), FsError> {
        let now = self.now();
        self.tree()
            .write(comps, bytes, mode, append, now, self.disk_limit())
    }

    /// Replaces `comps` with a new regular file (the file primitives' write).
    pub(crate) fn replace_file(
        &self,
        comps: &[String],
        bytes: &[u8],
        mode: u32,
    ) -> std::result::Result<(), FsError> {
        let now = self.now();
        self.tree()
            .replace_file(comps, bytes, mode, now, self.disk_limit())
    }

    /// Creates a node (symlink, special entry) at `comps`.
    pub(crate) fn create_node(
        &self,
        comps: &[String],
        node: Node,
    ) -> std::result::Result<(), FsError> {
        let now = self.now();
        self.tree().create(comps, node, now)
    }

    pub(crate) fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    /// Returns once the sandbox is not paused: a frozen process makes no
    /// progress until `resume`.
    pub(crate) async fn wait_unpaused(&self) {
        if !self.is_paused() {
            return;
        }
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|p| !*p).await;
    }

    /// `conflict` while paused.
    pub(crate) fn refuse_paused(&self) -> Result<()> {
        if self.is_paused() {
            return Err(SandboxError::Paused {
                id: self.id.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// The sandbox's record.
    pub(crate) fn info(&self) -> SandboxInfo {
        SandboxInfo {
            id: self.id.clone(),
            backend: crate::NAME.to_string(),
            key: self.key.clone(),
            labels: self.labels.clone(),
            status: if self.is_paused() {
                SandboxStatus::Paused
            } else {
                SandboxStatus::Running
            },
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
        }
    }

    /// The normalized working directory for a command; `not_found` when it
    /// does not exist, `invalid_input` when it is not a directory.
    pub(crate) fn resolve_cwd(&self, cwd: Option<&corral_backend::SandboxPath>) -> Result<String> {
        let comps = match cwd {
            Some(cwd) => crate::tree::comps(cwd),
            None => crate::tree::comps_of("cwd", corral_backend::WORKSPACE_DIR)?,
        };
        let cwd = cwd.map_or(corral_backend::WORKSPACE_DIR, |c| c.as_str());
        let tree = self.tree();
        match tree.get(&comps, true) {
            Ok((_, Node::Dir { .. })) => Ok(format!("/{}", comps.join("/"))),
            Ok(_) => Err(FsError::NotDir.at(FileOp::OpenDir, cwd)),
            Err(FsError::NotFound) => Err(ExecError::CwdNotFound { cwd: cwd.into() }.into()),
            Err(e) => Err(e.at(FileOp::OpenDir, cwd)),
        }
    }

    /// The environment a command starts with: the sandbox's, then `extra`,
    /// then `PATH` and `HOME` where unset, and `PWD`.
    pub(crate) fn command_env(&self, extra: &Environment, cwd: &str) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .env
            .iter()
            .chain(extra.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env.entry("PATH".into())
            .or_insert_with(|| corral_backend::DEFAULT_PATH.to_string());
        env.entry("HOME".into())
            .or_insert_with(|| corral_backend::WORKSPACE_DIR.to_string());
        env.insert("PWD".into(), cwd.to_string());
        env
    }

    /// The platform description `native` returns (environment keys only:
    /// values can hold credentials).
    pub(crate) fn native(&self) -> serde_json::Value {
        let (files, bytes) = {
            let tree = self.tree();
            let mut files = 0u64;
            tree.walk(&mut |_, n| files += u64::from(matches!(n, Node::File { .. })));
            (files, tree.stored_bytes())
        };
        serde_json::json!({
            "backend": crate::NAME,
            "kind": "in-memory oracle: nothing here is isolated by a kernel",
            "id": self.id,
            "key": self.key,
            "labels": self.labels,
            "status": if self.is_paused() { "paused" } else { "running" },
            "created_at_ms": self.created_at_ms,
            "expires_at_ms": self.expires_at_ms,
            "idle_timeout_ms": self.idle_timeout_ms,
            "last_active_ms": self.last_active_ms.load(Ordering::SeqCst),
            "env_keys": self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            "network": self.network,
            "size": self.size,
            "limits": self.limits,
            "ports": self.ports,
            "image": self.image,
            "from_snapshot": self.from_snapshot,
            "files": files,
            "bytes_stored": bytes,
            "processes_running": self.procs.running(),
        })
    }
}
