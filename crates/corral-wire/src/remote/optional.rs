//! The optional members a remote backend forwards when the served backend
//! declares them: pause, snapshots, clone, usage, tree listings and batch
//! writes.

use async_trait::async_trait;
use corral_backend::{
    BatchFile, BatchWriteOps, Labels, PauseOps, Result, SnapshotCloneOps, SnapshotInfo,
    SnapshotOps, TreeListOps, TreeListing, Usage, UsageOps,
};
use corral_contract::Octets;

use super::{RemoteBackend, sandbox};
use crate::protocol::backend::{
    BackendRoute, BatchBody, BatchFileBody, LabelsBody, SnapshotOf, SnapshotRef, TreeBody,
};

#[async_trait]
impl PauseOps for RemoteBackend {
    async fn pause(&self, id: &str) -> Result<()> {
        self.remote.call(BackendRoute::Pause, &sandbox(id)).await
    }

    async fn resume(&self, id: &str) -> Result<()> {
        self.remote.call(BackendRoute::Resume, &sandbox(id)).await
    }
}

#[async_trait]
impl SnapshotOps for RemoteBackend {
    async fn snapshot(&self, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let body = SnapshotOf {
            id: id.into(),
            labels: labels.clone(),
        };
        self.remote.call(BackendRoute::Snapshot, &body).await
    }

    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        let body = SnapshotRef {
            snapshot_id: snapshot_id.into(),
            labels: Labels::new(),
        };
        self.remote.call(BackendRoute::DeleteSnapshot, &body).await
    }

    async fn list_snapshots(&self, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
        let body = LabelsBody {
            labels: labels.clone(),
        };
        self.remote.call(BackendRoute::ListSnapshots, &body).await
    }
}

#[async_trait]
impl SnapshotCloneOps for RemoteBackend {
    async fn clone_snapshot(&self, snapshot_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let body = SnapshotRef {
            snapshot_id: snapshot_id.into(),
            labels: labels.clone(),
        };
        self.remote.call(BackendRoute::CloneSnapshot, &body).await
    }
}

#[async_trait]
impl UsageOps for RemoteBackend {
    async fn usage(&self, id: &str) -> Result<Usage> {
        self.remote.call(BackendRoute::Usage, &sandbox(id)).await
    }
}

#[async_trait]
impl TreeListOps for RemoteBackend {
    async fn list_tree(
        &self,
        id: &str,
        root: &corral_backend::SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing> {
        let body = TreeBody {
            id: id.into(),
            root: root.to_string(),
            max_entries: u64::try_from(max_entries).unwrap_or(u64::MAX),
        };
        self.remote.call(BackendRoute::ListTree, &body).await
    }
}

#[async_trait]
impl BatchWriteOps for RemoteBackend {
    async fn write_batch(&self, id: &str, files: Vec<BatchFile>) -> Result<()> {
        let body = BatchBody {
            id: id.into(),
            files: files
                .into_iter()
                .map(|f| BatchFileBody {
                    path: f.path.to_string(),
                    bytes: Octets::new(f.bytes),
                    mode: f.mode,
                })
                .collect(),
        };
        self.remote.call(BackendRoute::WriteBatch, &body).await
    }
}
