//! What the SDK's integration tests share: the backends they run on, a
//! wrapper backend that changes the key mode or the capabilities and counts
//! file calls, run options that time out or abort, and a wait for the
//! activity records of a sandbox.

use crate::sp;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::{
    Backend, CancellationToken, Capabilities, CreateRequest, DirEntry, ErrorCode, ExecOutcome,
    ExecRequest, FileOps, FileStat, KeyMode, Labels, OutputSink, PreviewUrl, Result, SandboxInfo,
};
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_sdk::{ACTIVITY_DIR, Provider, ProviderHints, RunOptions};

/// A backend under test and what keeps it alive (its state directory).
pub struct Target {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// The state directory of local and linux.
    pub dir: Option<tempfile::TempDir>,
    linux: Option<LinuxBackend>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(l) = &self.linux {
            let _ = l.destroy_all();
        }
    }
}

/// The memory backend.
pub fn memory() -> Target {
    Target {
        backend: Arc::new(MemoryBackend::new()),
        dir: None,
        linux: None,
    }
}

/// The local backend on a fresh temporary state directory.
pub fn local() -> Target {
    let dir = tempfile::tempdir().unwrap();
    let backend = LocalBackend::open(dir.path()).unwrap();
    Target {
        backend: Arc::new(backend),
        dir: Some(dir),
        linux: None,
    }
}

/// The linux backend on a fresh temporary state directory, or `None` after
/// printing a skip line naming why this host cannot run it.
pub fn linux(test: &str) -> Option<Target> {
    if let Err(reason) = LinuxBackend::available() {
        eprintln!("skip: {test} on linux: {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let backend = LinuxBackend::open(dir.path()).unwrap();
    Some(Target {
        backend: Arc::new(backend.clone()),
        dir: Some(dir),
        linux: Some(backend),
    })
}

/// memory, local, and linux where this host can run it.
pub fn all(test: &str) -> Vec<Target> {
    let mut v = vec![memory(), local()];
    v.extend(linux(test));
    let names: Vec<&str> = v.iter().map(|t| t.backend.name()).collect();
    eprintln!("{test}: on {}", names.join(", "));
    v
}

/// Options that kill the run after `ms` milliseconds (`timeout`).
pub fn timeout_after(ms: u64) -> RunOptions {
    RunOptions {
        timeout: Some(Duration::from_millis(ms)),
        ..RunOptions::default()
    }
}

/// Options that kill the run when `token` is cancelled (`aborted`).
pub fn abort_on(token: CancellationToken) -> RunOptions {
    RunOptions {
        abort: Some(token),
        ..RunOptions::default()
    }
}

/// Activity records in sandbox `id`, read through `backend` (not through a
/// counting wrapper); none when the directory does not exist.
pub async fn records(backend: &Arc<dyn Backend>, id: &str) -> usize {
    match backend.files().list(id, &sp(ACTIVITY_DIR)).await {
        Ok(list) => list.len(),
        Err(e) if e.code() == ErrorCode::NotFound => 0,
        Err(e) => panic!("{e}"),
    }
}

/// Asks `check` up to `tries` times, `pause` apart, until it says yes;
/// whether it did.
pub async fn eventually<F, Fut>(tries: usize, pause: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..tries {
        if check().await {
            return true;
        }
        tokio::time::sleep(pause).await;
    }
    false
}

/// File calls a [`Wrapped`] backend saw, by primitive.
#[derive(Debug, Default)]
pub struct Counts {
    pub read: AtomicUsize,
    pub write: AtomicUsize,
    pub list: AtomicUsize,
    pub stat: AtomicUsize,
    pub remove: AtomicUsize,
    pub mkdir: AtomicUsize,
}

impl Counts {
    /// (mkdir, write, remove, every file call).
    pub fn summary(&self) -> (usize, usize, usize, usize) {
        let g = |a: &AtomicUsize| a.load(Ordering::SeqCst);
        let all = g(&self.read)
            + g(&self.write)
            + g(&self.list)
            + g(&self.stat)
            + g(&self.remove)
            + g(&self.mkdir);
        (g(&self.mkdir), g(&self.write), g(&self.remove), all)
    }
}

/// Another backend with a different key mode and capabilities. With
/// `inline_activity` in its hints it keeps `activity_path` itself around
/// `exec`, through the inner backend's files (not counted), like a backend
/// would natively; open it with [`Wrapped::provider`] for the core to know.
///
/// It forwards none of the optional members (pause, snapshots, terminals,
/// processes, usage, ranged/contained/tree reads, batch writes) and so
/// declares none of them: SDK rule "Declare what you implement" —
/// [`corral_backend::verify`] passes on it.
pub struct Wrapped {
    pub inner: Arc<dyn Backend>,
    pub key_mode: KeyMode,
    pub caps: Capabilities,
    /// What the wrapper does natively, for the core to be told.
    pub hints: ProviderHints,
    pub counts: Arc<Counts>,
    /// When set, previews carry this token in a header and the query.
    pub preview_token: Option<String>,
    files: CountingFiles,
}

impl Wrapped {
    pub fn new(inner: Arc<dyn Backend>) -> Wrapped {
        let counts = Arc::new(Counts::default());
        let caps = Capabilities {
            pause: false,
            snapshot: false,
            snapshot_clone: false,
            terminal: false,
            start_process: false,
            usage: false,
            read_range: false,
            contained_read: false,
            list_tree: false,
            write_batch: false,
            reclaim: false,
            port_connect: false,
            ..inner.capabilities()
        };
        let wrapped = Wrapped {
            key_mode: inner.key_mode(),
            caps,
            hints: ProviderHints::default(),
            files: CountingFiles {
                inner: inner.clone(),
                counts: counts.clone(),
                creates_parents: false,
            },
            inner,
            counts,
            preview_token: None,
        };
        corral_backend::verify(&wrapped).expect("the wrapper declares only what it forwards");
        wrapped
    }

    pub fn key_mode(mut self, mode: KeyMode) -> Wrapped {
        self.key_mode = mode;
        self
    }

    /// Keeps activity records inside `exec` and creates parents on write
    /// as given, and hints so.
    pub fn activity(mut self, inline: bool, creates_parents: bool) -> Wrapped {
        self.hints = ProviderHints {
            inline_activity: inline,
            write_creates_parents: creates_parents,
        };
        self.files.creates_parents = creates_parents;
        self
    }

    /// The wrapper opened for the core, with its hints.
    pub fn provider(self) -> Provider {
        let hints = self.hints;
        Provider::new(Arc::new(self)).with_hints(hints)
    }
}

struct CountingFiles {
    inner: Arc<dyn Backend>,
    counts: Arc<Counts>,
    creates_parents: bool,
}

#[async_trait]
impl FileOps for CountingFiles {
    async fn read(&self, id: &str, path: &SandboxPath) -> Result<Vec<u8>> {
        self.counts.read.fetch_add(1, Ordering::SeqCst);
        self.inner.files().read(id, path).await
    }
    async fn write(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        self.counts.write.fetch_add(1, Ordering::SeqCst);
        if self.creates_parents
            && let Some(parent) = path.parent()
            && !parent.is_root()
        {
            self.inner.files().mkdir(id, &parent, true).await?;
        }
        self.inner.files().write(id, path, bytes, mode).await
    }
    async fn list(&self, id: &str, path: &SandboxPath) -> Result<Vec<DirEntry>> {
        self.counts.list.fetch_add(1, Ordering::SeqCst);
        self.inner.files().list(id, path).await
    }
    async fn stat(&self, id: &str, path: &SandboxPath) -> Result<FileStat> {
        self.counts.stat.fetch_add(1, Ordering::SeqCst);
        self.inner.files().stat(id, path).await
    }
    async fn remove(&self, id: &str, path: &SandboxPath, recursive: bool) -> Result<()> {
        self.counts.remove.fetch_add(1, Ordering::SeqCst);
        self.inner.files().remove(id, path, recursive).await
    }
    async fn mkdir(&self, id: &str, path: &SandboxPath, parents: bool) -> Result<()> {
        self.counts.mkdir.fetch_add(1, Ordering::SeqCst);
        self.inner.files().mkdir(id, path, parents).await
    }
}

#[async_trait]
impl Backend for Wrapped {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn key_mode(&self) -> KeyMode {
        self.key_mode
    }
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        if self.key_mode == KeyMode::BestEffort {
            // Like a platform without unique names: the key is a label only.
            let mut req = req;
            if let Some(k) = req.key.take() {
                req.labels.insert("test.key", k).unwrap();
            }
            return self.inner.create(req).await;
        }
        self.inner.create(req).await
    }
    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        if self.key_mode == KeyMode::BestEffort {
            let mut labels = Labels::new();
            labels.insert("test.key", key.as_str()).unwrap();
            return Ok(self.inner.list(&labels).await?.into_iter().next());
        }
        self.inner.find(key).await
    }
    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        self.inner.connect(id).await
    }
    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        self.inner.list(labels).await
    }
    async fn destroy(&self, id: &str) -> Result<()> {
        self.inner.destroy(id).await
    }
    async fn exec(
        &self,
        id: &str,
        req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        let inline = match (&req.activity_path, self.hints.inline_activity) {
            (Some(p), true) => Some(p.clone()),
            _ => None,
        };
        if let Some(p) = &inline {
            let parent = p.parent().unwrap_or_else(SandboxPath::root);
            self.inner.files().mkdir(id, &parent, true).await?;
            self.inner.files().write(id, p, b"inline\n", None).await?;
        }
        let out = self.inner.exec(id, req, sink).await;
        if let Some(p) = &inline {
            let _ = self.inner.files().remove(id, p, false).await;
        }
        out
    }
    fn files(&self) -> &dyn FileOps {
        &self.files
    }
    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        let mut url = self.inner.preview_url(id, port).await?;
        if let Some(token) = &self.preview_token {
            url.url = format!("{}?port={port}&token={token}", url.url);
            url.headers.insert("x-preview-token".into(), token.clone());
        }
        Ok(url)
    }
    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        self.inner.native(id).await
    }
}
