//! A sandbox without `setsid` cannot keep a process past its exec: `start`
//! fails with `unsupported`, says why, and leaves no record behind.

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{
    Backend, Capabilities, Command, CreateRequest, ExecOutcome, ExecRequest, FileOps, KeyMode,
    Labels, OutputSink, PreviewUrl, Result, SandboxInfo,
};
use corral_backend_memory::MemoryBackend;
use corral_sdk::{CreateOptions, ErrorCode, Sandbox};

/// The memory backend, with a shell where `setsid` is not found.
struct NoSetsid(MemoryBackend);

#[async_trait]
impl Backend for NoSetsid {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn key_mode(&self) -> KeyMode {
        self.0.key_mode()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        self.0.create(req).await
    }
    async fn find(&self, key: &corral_backend::SandboxKey) -> Result<Option<SandboxInfo>> {
        self.0.find(key).await
    }
    async fn connect(&self, id: &str) -> Result<SandboxInfo> {
        self.0.connect(id).await
    }
    async fn list(&self, labels: &Labels) -> Result<Vec<SandboxInfo>> {
        self.0.list(labels).await
    }
    async fn destroy(&self, id: &str) -> Result<()> {
        self.0.destroy(id).await
    }
    async fn exec(
        &self,
        id: &str,
        mut req: ExecRequest,
        sink: &mut dyn OutputSink,
    ) -> Result<ExecOutcome> {
        if let Command::Shell(s) = &req.command
            && s.as_str().starts_with("setsid ")
        {
            req.command = Command::shell("echo 'sh: 1: setsid: not found' >&2; exit 127").unwrap();
        }
        self.0.exec(id, req, sink).await
    }
    fn files(&self) -> &dyn FileOps {
        self.0.files()
    }
    async fn preview_url(&self, id: &str, port: u16) -> Result<PreviewUrl> {
        self.0.preview_url(id, port).await
    }
    async fn native(&self, id: &str) -> Result<serde_json::Value> {
        self.0.native(id).await
    }
}

#[tokio::test]
async fn start_without_setsid_is_unsupported_and_leaves_nothing() {
    let backend = Arc::new(NoSetsid(MemoryBackend::new()));
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    let e = sb
        .processes()
        .start("svc", corral_sdk::Command::shell("sleep 60").unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.operation.as_str()),
        (ErrorCode::Unsupported, "processes.start"),
        "{e}"
    );
    assert!(e.message.contains("setsid: not found"), "{e}");
    assert!(sb.processes().list().await.unwrap().is_empty());
    assert!(!sb.files().exists("/.corral/procs/svc").await.unwrap());
    sb.destroy().await.unwrap();
}
