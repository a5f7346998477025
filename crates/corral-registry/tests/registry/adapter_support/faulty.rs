//! `Faulty<B>`: a backend that forwards to `B`, logs every mutation, and —
//! once armed with a budget of `n` mutations — dies at the next one: that
//! call and every later call fail, as if the process driving the backend
//! had crashed right there. A fresh adapter over the inner backend then
//! plays the restarted runtime.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::{
    Backend, BackendError, BatchFile, BatchWriteOps, Capabilities, ContainedReadOps, CreateRequest,
    DirEntry, ExecOutcome, ExecRequest, FileOps, FileStat, KeyMode, Labels, OutputSink, PauseOps,
    PlatformError, PreviewUrl, ProcessOps, Result, SandboxInfo, SnapshotCloneOps, SnapshotOps,
    TreeListOps,
};

/// One mutation the backend saw (or the caller's dispatch marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `files.write(path)`; `journal` is the state written when the file is
    /// an active-write journal.
    Write {
        path: String,
        journal: Option<String>,
    },
    /// `files.mkdir(path)`.
    Mkdir(String),
    /// `files.remove(path)`.
    Remove(String),
    /// `write_batch` of these paths.
    Batch(Vec<String>),
    /// The caller's dispatch marker ran.
    Marker,
}

#[derive(Debug, Default)]
struct State {
    budget: Option<usize>,
    /// The failure at the end of the budget is a single one: the backend
    /// lives on.
    once: bool,
    /// Every mutation hangs forever (a backend that stopped answering).
    stalled: bool,
    dead: bool,
    log: Vec<Event>,
}

/// The shared switchboard of a [`Faulty`] backend.
#[derive(Debug, Default)]
pub struct Control {
    state: Mutex<State>,
}

impl Control {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Lets `n` more mutations through, then dies.
    pub fn arm(&self, n: usize) {
        let mut st = self.state();
        st.budget = Some(n);
        st.once = false;
    }

    /// Lets `n` more mutations through, fails the next one, and lives on.
    pub fn fail_once_after(&self, n: usize) {
        let mut st = self.state();
        st.budget = Some(n);
        st.once = true;
    }

    /// Makes every later mutation hang forever.
    pub fn stall(&self) {
        self.state().stalled = true;
    }

    /// Whether it died.
    pub fn dead(&self) -> bool {
        self.state().dead
    }

    /// Every event so far.
    pub fn log(&self) -> Vec<Event> {
        self.state().log.clone()
    }

    /// Records the caller's dispatch marker.
    pub fn marker(&self) {
        self.state().log.push(Event::Marker);
    }

    fn alive(&self) -> Result<()> {
        if self.state().dead {
            return Err(BackendError::from(PlatformError::Unavailable {
                what: "the backend".into(),
                detail: "it died".into(),
            }));
        }
        Ok(())
    }

    async fn mutate(&self, event: Event) -> Result<()> {
        if self.state().stalled {
            std::future::pending::<()>().await;
        }
        let mut st = self.state();
        if st.dead {
            return Err(BackendError::from(PlatformError::Unavailable {
                what: "the backend".into(),
                detail: "it died".into(),
            }));
        }
        if let Some(budget) = st.budget.as_mut() {
            if *budget == 0 {
                st.budget = None;
                st.dead = !st.once;
                return Err(BackendError::from(PlatformError::Unavailable {
                    what: "the backend".into(),
                    detail: "it failed".into(),
                }));
            }
            *budget -= 1;
        }
        st.log.push(event);
        Ok(())
    }
}

/// The wrapper.
pub struct Faulty<B> {
    inner: Arc<B>,
    files: FaultyFiles<B>,
    control: Arc<Control>,
    /// Declares `write_batch` (when the inner backend does) but returns no
    /// accessor: a defective backend.
    hide_batch_write: bool,
    /// Declares these capabilities instead of the inner backend's.
    declared: Option<Capabilities>,
}

impl<B: Backend> Faulty<B> {
    pub fn new(inner: Arc<B>) -> Self {
        let control = Arc::new(Control::default());
        Self {
            files: FaultyFiles {
                inner: Arc::clone(&inner),
                control: Arc::clone(&control),
            },
            inner,
            control,
            hide_batch_write: false,
            declared: None,
        }
    }

    /// Declares `capabilities` instead of the inner backend's (a subset of
    /// them, so that every declared member exists).
    pub fn declaring(inner: Arc<B>, capabilities: Capabilities) -> Self {
        Self {
            // The wrapper forwards no reclaim member: a copied backend's
            // declaration of one would be a defect `verify` refuses.
            declared: Some(Capabilities {
                reclaim: false,
                ..capabilities
            }),
            ..Self::new(inner)
        }
    }

    /// A defective wrapper: `write_batch` declared, its accessor missing.
    pub fn hiding_batch_write(inner: Arc<B>) -> Self {
        Self {
            hide_batch_write: true,
            ..Self::new(inner)
        }
    }

    pub fn control(&self) -> Arc<Control> {
        Arc::clone(&self.control)
    }
}

pub struct FaultyFiles<B> {
    inner: Arc<B>,
    control: Arc<Control>,
}

#[async_trait]
impl<B: Backend> FileOps for FaultyFiles<B> {
    async fn read(&self, id: &str, path: &SandboxPath) -> Result<Vec<u8>> {
        self.control.alive()?;
        self.inner.files().read(id, path).await
    }

    async fn write(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        let journal = path
            .as_str()
            .ends_with("/journal.json")
            .then(|| serde_json::from_slice::<serde_json::Value>(bytes).ok())
            .flatten()
            .and_then(|v| v["state"].as_str().map(str::to_owned));
        self.control
            .mutate(Event::Write {
                path: path.to_string(),
                journal,
            })
            .await?;
        self.inner.files().write(id, path, bytes, mode).await
    }

    async fn list(&self, id: &str, path: &SandboxPath) -> Result<Vec<DirEntry>> {
        self.control.alive()?;
        self.inner.files().list(id, path).await
    }

    async fn stat(&self, id: &str, path: &SandboxPath) -> Result<FileStat> {
        self.control.alive()?;
        self.inner.files().stat(id, path).await
    }

    async fn remove(&self, id: &str, path: &SandboxPath, recursive: bool) -> Result<()> {
        self.control.mutate(Event::Remove(path.to_string())).await?;
        self.inner.files().remove(id, path, recursive).await
    }

    async fn mkdir(&self, id: &str, path: &SandboxPath, parents: bool) -> Result<()> {
        self.control.mutate(Event::Mkdir(path.to_string())).await?;
        self.inner.files().mkdir(id, path, parents).await
    }

    fn ranged(&self) -> Option<&dyn corral_backend::RangedRead> {
        self.inner.files().ranged()
    }
}

#[async_trait]
impl<B: Backend> BatchWriteOps for Faulty<B> {
    async fn write_batch(&self, id: &str, files: Vec<BatchFile>) -> Result<()> {
        let paths = files.iter().map(|f| f.path.to_string()).collect();
        self.control.mutate(Event::Batch(paths)).await?;
        match self.inner.batch_write_ops() {
            Some(ops) => ops.write_batch(id, files).await,
            None => Err(BackendError::unsupported("faulty", "write a batch")),
        }
    }
}

#[async_trait]
impl<B: Backend> Backend for Faulty<B> {
    fn name(&self) -> &str {
        "faulty"
    }

    fn key_mode(&self) -> KeyMode {
        self.inner.key_mode()
    }

    fn capabilities(&self) -> Capabilities {
        self.declared.unwrap_or_else(|| self.inner.capabilities())
    }

    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        self.control.alive()?;
        self.inner.create(req).await
    }

    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        self.control.alive()?;
        self.inner.find(key).await
    }

    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        self.control.alive()?;
        self.inner.connect(id).await
    }

    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        self.control.alive()?;
        self.inner.list(labels).await
    }

    async fn destroy(&self, id: &str) -> Result<()> {
        self.control.alive()?;
        self.inner.destroy(id).await
    }

    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        self.control.alive()?;
        self.inner.exec(id, req, sink).await
    }

    fn files(&self) -> &dyn FileOps {
        &self.files
    }

    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        self.inner.preview_url(id, port).await
    }

    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        self.inner.native(id).await
    }

    fn pause_ops(&self) -> Option<&dyn PauseOps> {
        self.inner.pause_ops()
    }

    fn snapshot_ops(&self) -> Option<&dyn SnapshotOps> {
        self.inner.snapshot_ops()
    }

    fn snapshot_clone_ops(&self) -> Option<&dyn SnapshotCloneOps> {
        self.inner.snapshot_clone_ops()
    }

    fn terminal_ops(&self) -> Option<&dyn corral_backend::TerminalOps> {
        self.inner.terminal_ops()
    }

    fn process_ops(&self) -> Option<&dyn ProcessOps> {
        self.inner.process_ops()
    }

    fn usage_ops(&self) -> Option<&dyn corral_backend::UsageOps> {
        self.inner.usage_ops()
    }

    fn contained_read_ops(&self) -> Option<&dyn ContainedReadOps> {
        self.inner.contained_read_ops()
    }

    fn tree_list_ops(&self) -> Option<&dyn TreeListOps> {
        self.inner.tree_list_ops()
    }

    fn batch_write_ops(&self) -> Option<&dyn BatchWriteOps> {
        if self.hide_batch_write {
            return None;
        }
        self.inner
            .batch_write_ops()
            .map(|_| self as &dyn BatchWriteOps)
    }
}
