//! The file primitives over the in-memory tree, and the test helpers that
//! create what the primitives cannot (symlinks, special entries).

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::contained_fs::FileOp;
use corral_backend::{DirEntry, FileOps, FileStat, RangedRead, RequestError, Result};

use crate::tree::{FsError, Node, SpecialKind, comps};
use crate::{Inner, MemoryBackend};

/// The permission bits a write sets: `mode`, or `0o644`.
pub(crate) fn check_mode(op: FileOp, path: &str, mode: Option<u32>) -> Result<u32> {
    let mode = mode.unwrap_or(0o644);
    if mode > 0o7777 {
        return Err(RequestError::Mode {
            op,
            path: path.into(),
            mode,
        }
        .into());
    }
    Ok(mode)
}

fn join(parent: &[String], name: &str) -> String {
    if parent.is_empty() {
        format!("/{name}")
    } else {
        format!("/{}/{name}", parent.join("/"))
    }
}

#[async_trait]
impl FileOps for Inner {
    async fn read(&self, id: &str, path: &SandboxPath) -> Result<Vec<u8>> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let tree = sb.tree();
        tree.read(&comps)
            .map(<[u8]>::to_vec)
            .map_err(|e| e.at(FileOp::Read, path))
    }

    async fn write(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        let comps = comps(path);
        let path = path.as_str();
        let mode = check_mode(FileOp::Write, path, mode)?;
        let sb = self.sandbox(id)?;
        sb.replace_file(&comps, bytes, mode)
            .map_err(|e| e.at(FileOp::Write, path))
    }

    async fn list(&self, id: &str, path: &SandboxPath) -> Result<Vec<DirEntry>> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let tree = sb.tree();
        match tree
            .get(&comps, true)
            .map_err(|e| e.at(FileOp::List, path))?
        {
            (_, Node::Dir { entries, .. }) => Ok(entries
                .iter()
                .map(|(name, n)| DirEntry {
                    name: name.clone(),
                    path: join(&comps, name),
                    file_type: n.file_type(),
                    size: n.size(),
                    mode: n.mode(),
                })
                .collect()),
            _ => Err(FsError::NotDir.at(FileOp::List, path)),
        }
    }

    async fn stat(&self, id: &str, path: &SandboxPath) -> Result<FileStat> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let tree = sb.tree();
        let (_, n) = tree
            .get(&comps, false)
            .map_err(|e| e.at(FileOp::Stat, path))?;
        Ok(FileStat {
            path: format!("/{}", comps.join("/")),
            file_type: n.file_type(),
            size: n.size(),
            mode: n.mode(),
            modified_at_ms: n.mtime(),
        })
    }

    async fn remove(&self, id: &str, path: &SandboxPath, recursive: bool) -> Result<()> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let now = sb.now();
        let r = sb.tree().remove(&comps, recursive, now);
        r.map_err(|e| e.at(FileOp::Remove, path))
    }

    async fn mkdir(&self, id: &str, path: &SandboxPath, parents: bool) -> Result<()> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let now = sb.now();
        let r = sb.tree().mkdir(&comps, parents, now);
        r.map_err(|e| e.at(FileOp::Mkdir, path))
    }

    fn ranged(&self) -> Option<&dyn RangedRead> {
        Some(self)
    }
}

#[async_trait]
impl RangedRead for Inner {
    async fn read_range(
        &self,
        id: &str,
        path: &SandboxPath,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.sandbox(id)?;
        let tree = sb.tree();
        let data = tree
            .read(&comps)
            .map_err(|e| e.at(FileOp::ReadRange, path))?;
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(data.len());
        Ok(data[start..end].to_vec())
    }
}

impl MemoryBackend {
    /// Creates a symlink at `path` pointing to `target` (any text, dangling
    /// or absolute targets included) in sandbox `id`. For tests: the file
    /// primitives cannot create links. `conflict` when `path` exists.
    pub fn symlink(&self, id: &str, path: &SandboxPath, target: &str) -> Result<()> {
        if target.is_empty() || target.contains('\0') {
            return Err(RequestError::SymlinkTarget {
                target: target.into(),
            }
            .into());
        }
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.inner.sandbox(id)?;
        let node = Node::Symlink {
            target: target.to_string(),
            mtime: sb.now(),
        };
        sb.create_node(&comps, node)
            .map_err(|e| e.at(FileOp::Write, path))
    }

    /// Creates a special entry (fifo, socket, device) at `path` in sandbox
    /// `id`, with mode `0o644`. For tests of listings and contained reads.
    pub fn mknod(&self, id: &str, path: &SandboxPath, kind: SpecialKind) -> Result<()> {
        let comps = comps(path);
        let path = path.as_str();
        let sb = self.inner.sandbox(id)?;
        let node = Node::Special {
            kind,
            mode: 0o644,
            mtime: sb.now(),
        };
        sb.create_node(&comps, node)
            .map_err(|e| e.at(FileOp::Write, path))
    }

    /// Creates a named pipe at `path` in sandbox `id` (see [`Self::mknod`]).
    pub fn mkfifo(&self, id: &str, path: &SandboxPath) -> Result<()> {
        self.mknod(id, path, SpecialKind::Fifo)
    }
}
