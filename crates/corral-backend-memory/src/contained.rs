//! Contained reads, resolved inside the in-memory tree the way
//! `corral_backend::contained` resolves them on a host.
//!
//! `path` and `allowed_root` are absolute sandbox paths, normalized
//! lexically (as every corral path is); `path` must lie under
//! `allowed_root` (else `outside_root`). The root itself is trusted and
//! resolved like any path. Below it the walk is physical, component by
//! component: a symlink's target is spliced in (an absolute target is
//! `outside_root`, never re-rooted), `..` inside a target pops the walked
//! directories and popping the root is `outside_root`, more than 40 links
//! is `symlink_loop`, and only a regular file is read — anything else is
//! `not_regular_file`, a missing component `not_found`.

use std::collections::VecDeque;

use async_trait::async_trait;
use corral_backend::SandboxPath;
use corral_backend::contained::{ContainedReadError, ContainmentReason};
use corral_backend::{ContainedReadFailure, ContainedReadOps};

use crate::Inner;
use crate::tree::{FsError, MAX_SYMLINK_HOPS, Node, Tree};

/// Resolves `rest` beneath the directory at canonical `root`; the regular
/// file's bytes, at most `max_bytes`.
fn walk(
    tree: &Tree,
    root: Vec<String>,
    rest: &[String],
    max_bytes: u64,
) -> Result<Vec<u8>, ContainmentReason> {
    let depth = root.len();
    let mut at = root;
    let mut queue: VecDeque<String> = rest.iter().cloned().collect();
    let mut hops = 0u32;
    let mut node = tree.node(&at).ok_or(ContainmentReason::NotFound)?;
    while let Some(c) = queue.pop_front() {
        match c.as_str() {
            "" | "." => continue,
            ".." => {
                if !matches!(node, Node::Dir { .. }) {
                    return Err(ContainmentReason::NotFound);
                }
                if at.len() <= depth {
                    return Err(ContainmentReason::OutsideRoot);
                }
                at.pop();
                node = tree.node(&at).ok_or(ContainmentReason::NotFound)?;
                continue;
            }
            _ => {}
        }
        let Node::Dir { entries, .. } = node else {
            return Err(ContainmentReason::NotFound);
        };
        let child = entries.get(&c).ok_or(ContainmentReason::NotFound)?;
        if let Node::Symlink { target, .. } = child {
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(ContainmentReason::SymlinkLoop);
            }
            if target.starts_with('/') {
                return Err(ContainmentReason::OutsideRoot);
            }
            let mut spliced: VecDeque<String> = target.split('/').map(str::to_string).collect();
            spliced.extend(queue.drain(..));
            queue = spliced;
            continue;
        }
        at.push(c);
        node = child;
    }
    match node {
        Node::File { data, .. } => {
            let len = data.len() as u64;
            if len > max_bytes {
                return Err(ContainmentReason::TooLarge {
                    limit: max_bytes,
                    actual: len,
                });
            }
            Ok(data.clone())
        }
        other => Err(ContainmentReason::NotRegularFile { kind: other.kind() }),
    }
}

#[async_trait]
impl ContainedReadOps for Inner {
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &SandboxPath,
        path: &SandboxPath,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ContainedReadFailure> {
        let refused =
            |reason| ContainedReadFailure::Refused(ContainedReadError::new(reason, path.as_str()));
        let root = crate::tree::comps(allowed_root);
        let comps = crate::tree::comps(path);
        let Some(rest) = comps.strip_prefix(root.as_slice()) else {
            return Err(refused(ContainmentReason::OutsideRoot));
        };
        let sb = self.sandbox(id)?;
        let tree = sb.tree();
        let root = match tree.get(&root, true) {
            Ok((canon, Node::Dir { .. })) => canon,
            Ok(_) | Err(FsError::NotFound) => return Err(refused(ContainmentReason::NotFound)),
            Err(FsError::Loop) => return Err(refused(ContainmentReason::SymlinkLoop)),
            Err(_) => return Err(refused(ContainmentReason::NotFound)),
        };
        walk(&tree, root, rest, max_bytes).map_err(refused)
    }
}
