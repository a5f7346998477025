//! The in-memory file system of one sandbox: directories, regular files with
//! a mode and an mtime, symlinks, and special entries.
//!
//! Paths arrive as components (already split by
//! [`corral_backend::sandbox_path`] or by the shell). Resolution follows
//! symlinks physically — relative targets from the directory holding the
//! link, absolute ones from `/`, `..` popping the physical path — with the
//! kernel's hop limit.

use corral_backend::SandboxPath;
use std::collections::{BTreeMap, VecDeque};

use corral_backend::FileType;
use corral_backend::contained::FileKind;
use sha2::{Digest, Sha256};

pub(crate) use crate::fs_error::{FsError, FsResult};

/// How many symlinks one resolution may follow (the kernel's `MAXSYMLINKS`).
pub(crate) const MAX_SYMLINK_HOPS: u32 = 40;

/// A special file the memory backend can hold (created by
/// [`crate::MemoryBackend::mknod`] and the shell's `mkfifo`). None of them can
/// be read: they exist so that listings and contained reads meet them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialKind {
    /// A named pipe.
    Fifo,
    /// A unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Dir {
        entries: BTreeMap<String, Node>,
        mode: u32,
        mtime: u64,
    },
    File {
        data: Vec<u8>,
        mode: u32,
        mtime: u64,
    },
    Symlink {
        target: String,
        mtime: u64,
    },
    Special {
        kind: SpecialKind,
        mode: u32,
        mtime: u64,
    },
}

impl Node {
    pub(crate) fn dir(mode: u32, mtime: u64) -> Node {
        Node::Dir {
            entries: BTreeMap::new(),
            mode,
            mtime,
        }
    }

    /// The kind of entry, as a contained read names it.
    pub(crate) fn kind(&self) -> FileKind {
        match self {
            Node::Dir { .. } => FileKind::Directory,
            Node::File { .. } => FileKind::Regular,
            Node::Symlink { .. } => FileKind::Symlink,
            Node::Special { kind, .. } => match kind {
                SpecialKind::Fifo => FileKind::Fifo,
                SpecialKind::Socket => FileKind::Socket,
                SpecialKind::CharDevice => FileKind::CharDevice,
                SpecialKind::BlockDevice => FileKind::BlockDevice,
            },
        }
    }

    pub(crate) fn file_type(&self) -> FileType {
        match self {
            Node::Dir { .. } => FileType::Directory,
            Node::File { .. } => FileType::File,
            Node::Symlink { .. } => FileType::Symlink,
            Node::Special { kind, .. } => match kind {
                SpecialKind::Fifo => FileType::Fifo,
                SpecialKind::Socket => FileType::Socket,
                SpecialKind::CharDevice => FileType::CharDevice,
                SpecialKind::BlockDevice => FileType::BlockDevice,
            },
        }
    }

    pub(crate) fn size(&self) -> u64 {
        match self {
            Node::File { data, .. } => data.len() as u64,
            Node::Symlink { target, .. } => target.len() as u64,
            Node::Dir { .. } | Node::Special { .. } => 0,
        }
    }

    pub(crate) fn mode(&self) -> u32 {
        match self {
            Node::Dir { mode, .. } | Node::File { mode, .. } | Node::Special { mode, .. } => *mode,
            Node::Symlink { .. } => 0o777,
        }
    }

    pub(crate) fn mtime(&self) -> u64 {
        match self {
            Node::Dir { mtime, .. }
            | Node::File { mtime, .. }
            | Node::Symlink { mtime, .. }
            | Node::Special { mtime, .. } => *mtime,
        }
    }
}

/// A sandbox's whole file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    root: Node,
}

/// The components of a symlink target, `.` and empty ones dropped.
fn target_components(target: &str) -> impl Iterator<Item = String> + '_ {
    target
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(str::to_string)
}

impl Tree {
    /// A tree holding `/workspace` and `/tmp`.
    pub(crate) fn new(now: u64) -> Tree {
        let mut t = Tree {
            root: Node::dir(0o755, now),
        };
        t.ensure_standard_dirs(now);
        t
    }

    /// Creates `/workspace` and `/tmp` where missing (after a restore).
    pub(crate) fn ensure_standard_dirs(&mut self, now: u64) {
        if let Node::Dir { entries, .. } = &mut self.root {
            let ws = corral_backend::WORKSPACE_DIR.trim_start_matches('/');
            entries
                .entry(ws.to_string())
                .or_insert_with(|| Node::dir(0o755, now));
            entries
                .entry("tmp".to_string())
                .or_insert_with(|| Node::dir(0o1777, now));
        }
    }

    /// The node at a canonical (symlink-free) path.
    pub(crate) fn node(&self, canon: &[String]) -> Option<&Node> {
        let mut cur = &self.root;
        for c in canon {
            match cur {
                Node::Dir { entries, .. } => cur = entries.get(c)?,
                _ => return None,
            }
        }
        Some(cur)
    }

    fn node_mut(&mut self, canon: &[String]) -> Option<&mut Node> {
        let mut cur = &mut self.root;
        for c in canon {
            match cur {
                Node::Dir { entries, .. } => cur = entries.get_mut(c)?,
                _ => return None,
            }
        }
        Some(cur)
    }

    /// The entries of the directory at canonical `canon`, and its mtime.
    fn dir_mut(&mut self, canon: &[String]) -> FsResult<(&mut BTreeMap<String, Node>, &mut u64)> {
        match self.node_mut(canon) {
            Some(Node::Dir { entries, mtime, .. }) => Ok((entries, mtime)),
            Some(_) => Err(FsError::NotDir),
            None => Err(FsError::NotFound),
        }
    }

    /// Resolves `comps` to a canonical path, following every symlink on the
    /// way and (with `follow_last`) a final one. The final entry itself may
    /// not exist; every directory before it must.
    pub(crate) fn resolve(&self, comps: &[String], follow_last: bool) -> FsResult<Vec<String>> {
        let mut hops = 0u32;
        let mut out: Vec<String> = Vec::new();
        let mut queue: VecDeque<String> = comps
            .iter()
            .filter(|c| !c.is_empty() && *c != ".")
            .cloned()
            .collect();
        while let Some(c) = queue.pop_front() {
            if c == ".." {
                out.pop();
                continue;
            }
            let last = queue.is_empty();
            let entries = match self.node(&out) {
                Some(Node::Dir { entries, .. }) => entries,
                Some(_) => return Err(FsError::NotDir),
                None => return Err(FsError::NotFound),
            };
            match entries.get(&c) {
                None if last => out.push(c),
                None => return Err(FsError::NotFound),
                Some(Node::Symlink { target, .. }) if !last || follow_last => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(FsError::Loop);
                    }
                    if target.starts_with('/') {
                        out.clear();
                    }
                    let mut spliced: VecDeque<String> = target_components(target).collect();
                    spliced.extend(queue.drain(..));
                    queue = spliced;
                }
                Some(_) => out.push(c),
            }
        }
        Ok(out)
    }

    /// The node `comps` names, following symlinks (a final one with `follow`).
    pub(crate) fn get(&self, comps: &[String], follow: bool) -> FsResult<(Vec<String>, &Node)> {
        let canon = self.resolve(comps, follow)?;
        match self.node(&canon) {
            Some(n) => Ok((canon, n)),
            None => Err(FsError::NotFound),
        }
    }

    /// A regular file's bytes.
    pub(crate) fn read(&self, comps: &[String]) -> FsResult<&[u8]> {
        match self.get(comps, true)?.1 {
            Node::File { data, .. } => Ok(data),
            Node::Dir { .. } => Err(FsError::IsDir),
            other => Err(FsError::NotRegular(other.kind())),
        }
    }

    /// Bytes held by regular files.
    pub(crate) fn stored_bytes(&self) -> u64 {
        let mut total = 0;
        self.walk(&mut |_, n| {
            total += if let Node::File { data, .. } = n {
                data.len() as u64
            } else {
                0
            }
        });
        total
    }

    /// Writes (or with `append`, appends to) a regular file; the parent must
    /// exist. `mode` replaces the permission bits; a new file without one
    /// gets `0o644`. `limit` caps the bytes all files may hold.
    pub(crate) fn write(
        &mut self,
        comps: &[String],
        bytes: &[u8],
        mode: Option<u32>,
        append: bool,
        now: u64,
        limit: Option<u64>,
    ) -> FsResult<()> {
        let canon = self.resolve(comps, true)?;
        let Some((name, parent)) = canon.split_last() else {
            return Err(FsError::IsDir);
        };
        if let Some(limit) = limit {
            let old = match self.node(&canon) {
                Some(Node::File { data, .. }) => data.len() as u64,
                _ => 0,
            };
            let new = if append {
                old + bytes.len() as u64
            } else {
                bytes.len() as u64
            };
            if new > old && self.stored_bytes() - old + new > limit {
                return Err(FsError::NoSpace);
            }
        }
        let (entries, dir_mtime) = self.dir_mut(parent)?;
        match entries.get_mut(name) {
            Some(Node::File {
                data,
                mode: m,
                mtime,
            }) => {
                if append {
                    data.extend_from_slice(bytes);
                } else {
                    *data = bytes.to_vec();
                }
                if let Some(mode) = mode {
                    *m = mode & 0o7777;
                }
                *mtime = now;
                Ok(())
            }
            Some(Node::Dir { .. }) => Err(FsError::IsDir),
            Some(Node::Symlink { .. }) => Err(FsError::Loop),
            Some(n @ Node::Special { .. }) => Err(FsError::NotRegular(n.kind())),
            None => {
                entries.insert(
                    name.clone(),
                    Node::File {
                        data: bytes.to_vec(),
                        mode: mode.unwrap_or(0o644) & 0o7777,
                        mtime: now,
                    },
                );
                *dir_mtime = now;
                Ok(())
            }
        }
    }

    /// Replaces whatever non-directory is at `comps` — a final symlink
    /// itself, not its target — with a new regular file of `mode`, as a
    /// write-then-rename does. The parent must exist.
    pub(crate) fn replace_file(
        &mut self,
        comps: &[String],
        bytes: &[u8],
        mode: u32,
        now: u64,
        limit: Option<u64>,
    ) -> FsResult<()> {
        let canon = self.resolve(comps, false)?;
        let Some((name, parent)) = canon.split_last() else {
            return Err(FsError::IsDir);
        };
        if let Some(limit) = limit {
            let old = match self.node(&canon) {
                Some(Node::File { data, .. }) => data.len() as u64,
                _ => 0,
            };
            let new = bytes.len() as u64;
            if new > old && self.stored_bytes() - old + new > limit {
                return Err(FsError::NoSpace);
            }
        }
        let (entries, dir_mtime) = self.dir_mut(parent)?;
        if let Some(Node::Dir { .. }) = entries.get(name) {
            return Err(FsError::IsDir);
        }
        entries.insert(
            name.clone(),
            Node::File {
                data: bytes.to_vec(),
                mode: mode & 0o7777,
                mtime: now,
            },
        );
        *dir_mtime = now;
        Ok(())
    }

    /// Creates a directory; with `parents` its missing ancestors too, and an
    /// existing directory is no error.
    pub(crate) fn mkdir(&mut self, comps: &[String], parents: bool, now: u64) -> FsResult<()> {
        if !parents {
            let node = Node::dir(0o755, now);
            return self.create(comps, node, now);
        }
        for i in 1..=comps.len() {
            let canon = self.resolve(&comps[..i], true)?;
            match self.node(&canon) {
                Some(Node::Dir { .. }) => {}
                Some(_) => return Err(FsError::Exists),
                None => self.create(&canon, Node::dir(0o755, now), now)?,
            }
        }
        Ok(())
    }

    /// Creates `node` at `comps` (a final symlink is not followed: it exists).
    pub(crate) fn create(&mut self, comps: &[String], node: Node, now: u64) -> FsResult<()> {
        let canon = self.resolve(comps, false)?;
        let Some((name, parent)) = canon.split_last() else {
            return Err(FsError::Exists);
        };
        let (entries, dir_mtime) = self.dir_mut(parent)?;
        if entries.contains_key(name) {
            return Err(FsError::Exists);
        }
        entries.insert(name.clone(), node);
        *dir_mtime = now;
        Ok(())
    }

    /// Updates a file's mtime, creating it empty when missing.
    pub(crate) fn touch(&mut self, comps: &[String], now: u64) -> FsResult<()> {
        let canon = self.resolve(comps, true)?;
        match self.node_mut(&canon) {
            Some(Node::Dir { mtime, .. })
            | Some(Node::File { mtime, .. })
            | Some(Node::Symlink { mtime, .. })
            | Some(Node::Special { mtime, .. }) => {
                *mtime = now;
                Ok(())
            }
            None => self.write(&canon, b"", None, true, now, None),
        }
    }

    /// Removes an entry (a final symlink itself, not its target); a
    /// non-empty directory only with `recursive`.
    pub(crate) fn remove(&mut self, comps: &[String], recursive: bool, now: u64) -> FsResult<()> {
        let canon = self.resolve(comps, false)?;
        let Some((name, parent)) = canon.split_last() else {
            return Err(FsError::Root);
        };
        let (entries, dir_mtime) = self.dir_mut(parent)?;
        match entries.get(name) {
            None => Err(FsError::NotFound),
            Some(Node::Dir { entries, .. }) if !recursive && !entries.is_empty() => {
                Err(FsError::NotEmpty)
            }
            Some(_) => {
                entries.remove(name);
                *dir_mtime = now;
                Ok(())
            }
        }
    }

    /// Visits every entry below the root, depth first, parents before
    /// children, with its `/`-joined path relative to the root.
    pub(crate) fn walk<'a>(&'a self, f: &mut dyn FnMut(&str, &'a Node)) {
        walk_node(&self.root, "", f);
    }
}

fn walk_node<'a>(node: &'a Node, prefix: &str, f: &mut dyn FnMut(&str, &'a Node)) {
    if let Node::Dir { entries, .. } = node {
        for (name, child) in entries {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            f(&path, child);
            walk_node(child, &path, f);
        }
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256_tag(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The components of `path` as the tree walks them.
pub(crate) fn comps(path: &SandboxPath) -> Vec<String> {
    path.components().map(str::to_owned).collect()
}

/// The components of a path given as text (a shell's, a working
/// directory's), made a [`SandboxPath`] first; `field` names it in the
/// error.
pub(crate) fn comps_of(field: &str, text: &str) -> corral_backend::Result<Vec<String>> {
    corral_backend::sandbox_path(field, text).map(|p| comps(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        comps_of("p", s).unwrap()
    }

    #[test]
    fn write_requires_parent_and_follows_symlinks() {
        let mut t = Tree::new(1);
        assert_eq!(
            t.write(&p("/nope/a"), b"x", None, false, 2, None),
            Err(FsError::NotFound)
        );
        t.write(&p("/workspace/a"), b"hi", None, false, 2, None)
            .unwrap();
        t.create(
            &p("/workspace/l"),
            Node::Symlink {
                target: "a".into(),
                mtime: 3,
            },
            3,
        )
        .unwrap();
        assert_eq!(t.read(&p("/workspace/l")).unwrap(), b"hi");
        t.write(&p("/workspace/l"), b"yo", None, true, 4, None)
            .unwrap();
        assert_eq!(t.read(&p("/workspace/a")).unwrap(), b"hiyo");
        let (_, n) = t.get(&p("/workspace/l"), false).unwrap();
        assert_eq!(n.file_type(), FileType::Symlink);
    }

    #[test]
    fn symlink_loops_and_dotdot_are_physical() {
        let mut t = Tree::new(1);
        t.mkdir(&p("/workspace/d/e"), true, 1).unwrap();
        t.create(
            &p("/workspace/up"),
            Node::Symlink {
                target: "d/e".into(),
                mtime: 1,
            },
            1,
        )
        .unwrap();
        t.write(&p("/workspace/d/f"), b"F", None, false, 1, None)
            .unwrap();
        // up/../f is d/e/../f = d/f, physically.
        let comps: Vec<String> = ["workspace", "up", "..", "f"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(t.read(&comps).unwrap(), b"F");
        t.create(
            &p("/workspace/x"),
            Node::Symlink {
                target: "y".into(),
                mtime: 1,
            },
            1,
        )
        .unwrap();
        t.create(
            &p("/workspace/y"),
            Node::Symlink {
                target: "x".into(),
                mtime: 1,
            },
            1,
        )
        .unwrap();
        assert_eq!(t.read(&p("/workspace/x")), Err(FsError::Loop));
    }

    #[test]
    fn mkdir_remove_and_limits() {
        let mut t = Tree::new(1);
        t.mkdir(&p("/a/b/c"), true, 1).unwrap();
        t.mkdir(&p("/a/b/c"), true, 1).unwrap();
        assert_eq!(t.mkdir(&p("/a/b/c"), false, 1), Err(FsError::Exists));
        assert_eq!(t.mkdir(&p("/x/y"), false, 1), Err(FsError::NotFound));
        assert_eq!(t.remove(&p("/a"), false, 1), Err(FsError::NotEmpty));
        t.remove(&p("/a"), true, 1).unwrap();
        assert_eq!(t.remove(&p("/a"), true, 1), Err(FsError::NotFound));
        assert_eq!(t.remove(&p("/"), true, 1), Err(FsError::Root));
        t.write(&p("/tmp/f"), b"1234", None, false, 1, Some(5))
            .unwrap();
        assert_eq!(
            t.write(&p("/tmp/g"), b"12", None, false, 1, Some(5)),
            Err(FsError::NoSpace)
        );
        t.write(&p("/tmp/f"), b"1", None, false, 1, Some(5))
            .unwrap();
        assert_eq!(t.stored_bytes(), 1);
    }
}
