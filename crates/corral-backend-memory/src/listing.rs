//! Complete leaf listings and all-or-nothing batch writes.

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::contained_fs::FileOp;
use corral_backend::{
    BatchFile, BatchWriteOps, Result, TreeEntry, TreeEntryKind, TreeListOps, TreeListing,
};

use crate::Inner;
use crate::files::check_mode;
use crate::tree::{FsError, Node, SpecialKind, sha256_tag};

/// Collects every leaf below the directory `node`, paths relative to the
/// listed root. A directory holding a regular file `.git` is a submodule
/// leaf and is not descended; an empty directory is no leaf.
fn leaves(node: &Node, prefix: &str, out: &mut Vec<TreeEntry>) {
    let Node::Dir { entries, .. } = node else {
        return;
    };
    for (name, child) in entries {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let kind = match child {
            Node::Dir { entries, .. } => {
                if matches!(entries.get(".git"), Some(Node::File { .. })) {
                    TreeEntryKind::Submodule
                } else {
                    leaves(child, &path, out);
                    continue;
                }
            }
            Node::File { data, .. } => TreeEntryKind::File {
                size: data.len() as u64,
                sha256: sha256_tag(data),
            },
            Node::Symlink { .. } => TreeEntryKind::Symlink,
            Node::Special { kind, .. } => match kind {
                SpecialKind::Fifo => TreeEntryKind::Fifo,
                SpecialKind::Socket => TreeEntryKind::Socket,
                SpecialKind::CharDevice | SpecialKind::BlockDevice => TreeEntryKind::Device,
            },
        };
        out.push(TreeEntry { path, kind });
    }
}

#[async_trait]
impl TreeListOps for Inner {
    async fn list_tree(
        &self,
        id: &str,
        root: &SandboxPath,
        max_entries: usize,
    ) -> Result<TreeListing> {
        let comps = crate::tree::comps(root);
        let root = root.as_str();
        let sb = self.sandbox(id)?;
        let mut entries = Vec::new();
        {
            let tree = sb.tree();
            let (_, node) = tree
                .get(&comps, true)
                .map_err(|e| e.at(FileOp::ListTree, root))?;
            if !matches!(node, Node::Dir { .. }) {
                return Err(FsError::NotDir.at(FileOp::ListTree, root));
            }
            leaves(node, "", &mut entries);
        }
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        let complete = entries.len() <= max_entries;
        entries.truncate(max_entries);
        Ok(TreeListing { entries, complete })
    }
}

#[async_trait]
impl BatchWriteOps for Inner {
    /// Writes every file (in order, as `files.write` would) to a copy of the
    /// tree and publishes the copy only when all succeeded: a failure leaves
    /// the sandbox exactly as it was.
    async fn write_batch(&self, id: &str, files: Vec<BatchFile>) -> Result<()> {
        let mut checked = Vec::with_capacity(files.len());
        for f in &files {
            let comps = crate::tree::comps(&f.path);
            checked.push((
                comps,
                check_mode(FileOp::WriteBatch, f.path.as_str(), f.mode)?,
                f,
            ));
        }
        let sb = self.sandbox(id)?;
        let now = sb.now();
        let limit = sb.disk_limit();
        let mut tree = sb.tree();
        let mut staged = tree.clone();
        for (comps, mode, f) in checked {
            staged
                .replace_file(&comps, &f.bytes, mode, now, limit)
                .map_err(|e| e.at(FileOp::WriteBatch, f.path.as_str()))?;
        }
        *tree = staged;
        Ok(())
    }
}
