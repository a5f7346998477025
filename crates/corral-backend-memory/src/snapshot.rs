//! Pause and resume, snapshots (a deep copy of the file tree, digested
//! over its canonical serialization), clones, and usage.

use async_trait::async_trait;
use corral_backend::{
    BackendError, Labels, PauseOps, Result, SnapshotCloneOps, SnapshotError, SnapshotInfo,
    SnapshotOps, Usage, UsageOps, labels_match,
};

use crate::Inner;
use crate::tree::{Node, SpecialKind, Tree, sha256_tag};

/// A stored snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) info: SnapshotInfo,
    pub(crate) tree: Tree,
}

/// The canonical serialization a snapshot digest is taken over: every
/// entry sorted by path (bytewise), each as a type tag, the path, the mode
/// and the content (a file's bytes, a symlink's target) — never mtimes, so
/// equal trees digest equally whatever the clock said.
pub(crate) fn canonical_bytes(tree: &Tree) -> Vec<u8> {
    let mut items: Vec<(String, &Node)> = Vec::new();
    tree.walk(&mut |p, n| items.push((format!("/{p}"), n)));
    items.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = b"corral-memory-tree-v1\n".to_vec();
    for (path, node) in items {
        let (tag, content): (u8, &[u8]) = match node {
            Node::Dir { .. } => (b'd', b""),
            Node::File { data, .. } => (b'f', data),
            Node::Symlink { target, .. } => (b'l', target.as_bytes()),
            Node::Special { kind, .. } => match kind {
                SpecialKind::Fifo => (b'p', b""),
                SpecialKind::Socket => (b's', b""),
                SpecialKind::CharDevice => (b'c', b""),
                SpecialKind::BlockDevice => (b'b', b""),
            },
        };
        out.push(tag);
        out.extend_from_slice(&(path.len() as u64).to_be_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(&node.mode().to_be_bytes());
        out.extend_from_slice(&(content.len() as u64).to_be_bytes());
        out.extend_from_slice(content);
    }
    out
}

/// `sha256:<hex>` of [`canonical_bytes`], and their length.
pub(crate) fn digest(tree: &Tree) -> (String, u64) {
    let bytes = canonical_bytes(tree);
    (sha256_tag(&bytes), bytes.len() as u64)
}

impl Inner {
    /// Stores `tree` as a new snapshot.
    fn store(&self, source: &str, mut labels: Labels, extra: &Labels, tree: Tree) -> SnapshotInfo {
        labels.extend(extra);
        let (digest, size_bytes) = digest(&tree);
        let now = self.clock.now_ms();
        let mut st = self.state();
        st.next_snapshot += 1;
        let seq = st.next_snapshot;
        let info = SnapshotInfo {
            id: format!("memsnap-{seq}"),
            source_sandbox_id: source.to_string(),
            digest,
            size_bytes,
            created_at_ms: now,
            labels,
        };
        st.snapshots.insert(
            seq,
            Stored {
                info: info.clone(),
                tree,
            },
        );
        info
    }
}

#[async_trait]
impl PauseOps for Inner {
    /// Freezes the sandbox: running commands make no progress (their next
    /// read, write or command waits), and new commands are refused with
    /// `conflict` until `resume`. Pausing a paused sandbox is no error.
    async fn pause(&self, id: &str) -> Result<()> {
        self.sandbox(id)?.set_paused(true);
        Ok(())
    }

    async fn resume(&self, id: &str) -> Result<()> {
        self.sandbox(id)?.set_paused(false);
        Ok(())
    }
}

#[async_trait]
impl SnapshotOps for Inner {
    async fn snapshot(&self, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let sb = self.sandbox(id)?;
        let tree = sb.tree().clone();
        Ok(self.store(&sb.id, sb.labels.clone(), labels, tree))
    }

    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        self.state()
            .snapshots
            .retain(|_, s| s.info.id != snapshot_id);
        Ok(())
    }

    async fn list_snapshots(&self, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
        Ok(self
            .state()
            .snapshots
            .values()
            .filter(|s| labels_match(&s.info.labels, labels))
            .map(|s| s.info.clone())
            .collect())
    }
}

#[async_trait]
impl SnapshotCloneOps for Inner {
    async fn clone_snapshot(&self, snapshot_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let source = self
            .state()
            .snapshots
            .values()
            .find(|s| s.info.id == snapshot_id)
            .cloned()
            .ok_or_else(|| {
                BackendError::from(SnapshotError::NotFound {
                    snapshot: snapshot_id.into(),
                })
            })?;
        Ok(self.store(
            &source.info.source_sandbox_id,
            source.info.labels,
            labels,
            source.tree,
        ))
    }
}

#[async_trait]
impl UsageOps for Inner {
    /// Bytes held by files (as `disk_bytes`) and simulated processes alive;
    /// CPU and memory are not measured.
    async fn usage(&self, id: &str) -> Result<Usage> {
        let sb = self.sandbox(id)?;
        let disk = sb.tree().stored_bytes();
        Ok(Usage {
            cpu_ms: None,
            memory_bytes: None,
            disk_bytes: Some(disk),
            processes: Some(sb.procs.running()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        crate::tree::comps_of("p", s).unwrap()
    }

    #[test]
    fn digest_ignores_mtimes_but_not_modes_or_content() {
        let mut a = Tree::new(1);
        let mut b = Tree::new(99);
        a.write(&p("/workspace/f"), b"x", None, false, 5, None)
            .unwrap();
        b.write(&p("/workspace/f"), b"x", None, false, 7, None)
            .unwrap();
        assert_eq!(digest(&a), digest(&b));
        b.write(&p("/workspace/f"), b"x", Some(0o755), false, 7, None)
            .unwrap();
        assert_ne!(digest(&a).0, digest(&b).0);
        a.write(&p("/workspace/f"), b"y", Some(0o755), false, 5, None)
            .unwrap();
        assert_ne!(digest(&a).0, digest(&b).0);
        let (d, len) = digest(&a);
        assert!(d.starts_with("sha256:") && d.len() == 71);
        assert_eq!(len, canonical_bytes(&a).len() as u64);
    }
}
