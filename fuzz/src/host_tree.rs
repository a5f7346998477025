//! A record of a host directory tree — every entry's type, permission
//! bits, bytes and link target — taken without following any symlink, so
//! that two records taken around an operation show whether it changed
//! anything there.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One entry as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory and its permission bits.
    Dir(u32),
    /// A regular file, its permission bits and its bytes.
    File(u32, Vec<u8>),
    /// A symlink and its target.
    Symlink(PathBuf),
    /// Anything else, by its `st_mode`.
    Other(u32),
}

/// A tree, by path relative to the recorded directory.
pub type Record = BTreeMap<PathBuf, Node>;

/// Records `dir`, descending into every directory except `opaque`, which
/// is recorded itself (so that it being replaced shows) but not its
/// content.
pub fn record(dir: &Path, opaque: &Path) -> Record {
    let mut out = Record::new();
    visit(dir, dir, opaque, &mut out);
    out
}

fn visit(base: &Path, path: &Path, opaque: &Path, out: &mut Record) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode();
    let node = if meta.file_type().is_dir() {
        Node::Dir(mode & 0o7777)
    } else if meta.file_type().is_file() {
        Node::File(mode & 0o7777, fs::read(path).unwrap_or_default())
    } else if meta.file_type().is_symlink() {
        Node::Symlink(fs::read_link(path).unwrap_or_default())
    } else {
        Node::Other(mode)
    };
    let descend = matches!(node, Node::Dir(_)) && path != opaque;
    let rel = path.strip_prefix(base).unwrap_or(path).to_path_buf();
    out.insert(rel, node);
    if descend && let Ok(children) = fs::read_dir(path) {
        for child in children.flatten() {
            visit(base, &child.path(), opaque, out);
        }
    }
}
