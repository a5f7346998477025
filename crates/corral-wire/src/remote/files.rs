//! The file primitives of a remote backend.

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{DirEntry, FileOps, FileStat, RangedRead, Result, SandboxPath};
use corral_contract::Octets;

use super::call::Remote;
use crate::protocol::backend::{
    BackendRoute, BytesBody, MkdirBody, PathBody, RangeBody, RemoveBody, WriteBody,
};

/// Files on the remote host's sandboxes.
#[derive(Debug)]
pub(super) struct RemoteFiles {
    pub(super) remote: Arc<Remote>,
    /// Whether the served backend declares `read_range`.
    pub(super) ranged: bool,
}

fn at(id: &str, path: &SandboxPath) -> PathBody {
    PathBody {
        id: id.into(),
        path: path.to_string(),
    }
}

#[async_trait]
impl FileOps for RemoteFiles {
    async fn read(&self, id: &str, path: &SandboxPath) -> Result<Vec<u8>> {
        let body: BytesBody = self.remote.call(BackendRoute::Read, &at(id, path)).await?;
        Ok(body.bytes.into_vec())
    }

    async fn write(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        let body = WriteBody {
            id: id.into(),
            path: path.to_string(),
            bytes: Octets::new(bytes),
            mode,
        };
        self.remote.call(BackendRoute::Write, &body).await
    }

    async fn list(&self, id: &str, path: &SandboxPath) -> Result<Vec<DirEntry>> {
        self.remote.call(BackendRoute::ListDir, &at(id, path)).await
    }

    async fn stat(&self, id: &str, path: &SandboxPath) -> Result<FileStat> {
        self.remote.call(BackendRoute::Stat, &at(id, path)).await
    }

    async fn remove(&self, id: &str, path: &SandboxPath, recursive: bool) -> Result<()> {
        let body = RemoveBody {
            id: id.into(),
            path: path.to_string(),
            recursive,
        };
        self.remote.call(BackendRoute::Remove, &body).await
    }

    async fn mkdir(&self, id: &str, path: &SandboxPath, parents: bool) -> Result<()> {
        let body = MkdirBody {
            id: id.into(),
            path: path.to_string(),
            parents,
        };
        self.remote.call(BackendRoute::Mkdir, &body).await
    }

    fn ranged(&self) -> Option<&dyn RangedRead> {
        self.ranged.then_some(self as &dyn RangedRead)
    }
}

#[async_trait]
impl RangedRead for RemoteFiles {
    async fn read_range(
        &self,
        id: &str,
        path: &SandboxPath,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let body = RangeBody {
            id: id.into(),
            path: path.to_string(),
            offset,
            len,
        };
        let bytes: BytesBody = self.remote.call(BackendRoute::ReadRange, &body).await?;
        Ok(bytes.bytes.into_vec())
    }
}
