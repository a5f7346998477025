//! Rules of declared members: "Declare what you implement".

use async_trait::async_trait;

use crate::backend::Backend;
use crate::capabilities::{Capabilities, Enforceable};
use crate::error::{ErrorCode, Result};
use crate::exec::{ExecOutcome, ExecRequest, OutputSink};
use crate::files::FileOps;
use crate::key::SandboxKey;
use crate::sandbox::{CreateRequest, KeyMode, Labels, PreviewUrl, SandboxInfo};
use crate::verify::verify;

/// Every member the backend declares exists (construction check passes).
pub async fn declared_members_exist(backend: &dyn Backend) {
    verify(backend).unwrap_or_else(|e| panic!("declared_members_exist: {e}"));
}

/// SDK rule "A capability without its method fails at createSandbox with
/// code `provider`": the backend wrapped so that it declares every optional
/// member while implementing none is refused at construction.
pub async fn declared_member_missing_is_refused_with_provider(backend: &dyn Backend) {
    let rule = "declared_member_missing_is_refused_with_provider";
    let liar = DeclaresAll {
        inner: backend,
        files: NoRanged(backend.files()),
        only_reclaim: false,
    };
    let err = verify(&liar).expect_err("a backend declaring members it lacks must be refused");
    assert_eq!(err.code(), ErrorCode::Provider, "{rule}: {err}");
    assert!(
        err.message().contains(backend.name()),
        "{rule}: names the backend: {err}"
    );
    let reclaim_liar = DeclaresAll {
        inner: backend,
        files: NoRanged(backend.files()),
        only_reclaim: true,
    };
    let err = verify(&reclaim_liar).expect_err("a backend declaring reclaim it lacks is refused");
    assert_eq!(err.code(), ErrorCode::Provider, "{rule}: {err}");
    assert!(
        err.message().contains("declares reclaim"),
        "{rule}: names the member: {err}"
    );
}

/// Declares every optional member (or, with `only_reclaim`, reclaim
/// alone), implements only the required ones.
struct DeclaresAll<'a> {
    inner: &'a dyn Backend,
    files: NoRanged<'a>,
    only_reclaim: bool,
}

#[async_trait]
impl Backend for DeclaresAll<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn key_mode(&self) -> KeyMode {
        self.inner.key_mode()
    }
    fn capabilities(&self) -> Capabilities {
        if self.only_reclaim {
            return Capabilities {
                reclaim: true,
                ..Capabilities::default()
            };
        }
        Capabilities {
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
            reclaim: true,
            port_connect: true,
            run_as_user: true,
            binds: false,
            enforces: Enforceable::ALL,
        }
    }
    async fn create(&self, req: CreateRequest) -> Result<SandboxInfo> {
        self.inner.create(req).await
    }
    async fn find(&self, key: &SandboxKey) -> Result<Option<SandboxInfo>> {
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
}

/// File ops without the ranged read.
struct NoRanged<'a>(&'a dyn FileOps);

#[async_trait]
impl FileOps for NoRanged<'_> {
    async fn read(&self, id: &str, path: &crate::SandboxPath) -> Result<Vec<u8>> {
        self.0.read(id, path).await
    }
    async fn write(
        &self,
        id: &str,
        path: &crate::SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        self.0.write(id, path, bytes, mode).await
    }
    async fn list(
        &self,
        id: &str,
        path: &crate::SandboxPath,
    ) -> Result<Vec<crate::files::DirEntry>> {
        self.0.list(id, path).await
    }
    async fn stat(&self, id: &str, path: &crate::SandboxPath) -> Result<crate::files::FileStat> {
        self.0.stat(id, path).await
    }
    async fn remove(&self, id: &str, path: &crate::SandboxPath, recursive: bool) -> Result<()> {
        self.0.remove(id, path, recursive).await
    }
    async fn mkdir(&self, id: &str, path: &crate::SandboxPath, parents: bool) -> Result<()> {
        self.0.mkdir(id, path, parents).await
    }
}
