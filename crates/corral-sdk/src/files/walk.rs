//! One tree walk over the `list` primitive, shared by `search`, `watch`,
//! `mark` and `download`: never follows a symlink, never descends into the
//! SDK's control directory, and stops with `quota` past [`MAX_WALK_ENTRIES`].

use std::collections::BTreeMap;

use corral_backend::{ErrorCode, FileType};
use sha2::{Digest, Sha256};

use super::{CONTROL_DIR, Files, join};
use crate::Operation;
use crate::error::Result;

/// Most entries one walk visits before it fails with `quota`.
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// One entry met by a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkEntry {
    /// Absolute sandbox path.
    pub(crate) path: String,
    /// Path relative to the walk's root (`""` for the root itself).
    pub(crate) rel: String,
    pub(crate) file_type: FileType,
    pub(crate) size: u64,
    pub(crate) mode: u32,
}

/// Refuses a directory entry name that could step out of its directory.
fn check_name(files: &Files<'_>, op: Operation, dir: &str, name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(files.sb.fail(
            ErrorCode::Provider,
            op,
            format!("{dir}: the backend listed an entry named {name:?}"),
        ));
    }
    Ok(())
}

impl Files<'_> {
    /// Every entry under `root` (the root itself excluded when it is a
    /// directory; a file root is its own single entry), sorted by path.
    pub(crate) async fn walk(&self, op: Operation, root: &str) -> Result<Vec<WalkEntry>> {
        let b = self.sb.backend();
        let id = self.sb.id();
        let st = b
            .files()
            .stat(
                id,
                &corral_backend::sandbox_path("path", root).map_err(|e| self.sb.error(op, e))?,
            )
            .await
            .map_err(|e| self.sb.error(op, e))?;
        if st.file_type != FileType::Directory {
            return Ok(vec![WalkEntry {
                path: root.to_string(),
                rel: String::new(),
                file_type: st.file_type,
                size: st.size,
                mode: st.mode,
            }]);
        }
        let mut out = Vec::new();
        let mut stack = vec![(root.to_string(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let at =
                corral_backend::sandbox_path("path", &dir).map_err(|e| self.sb.error(op, e))?;
            let entries = match b.files().list(id, &at).await {
                Ok(e) => e,
                // Removed between its listing and ours: nothing under it now.
                Err(e) if e.code() == ErrorCode::NotFound && dir != root => continue,
                Err(e) => return Err(self.sb.error(op, e)),
            };
            for e in entries {
                check_name(self, op, &dir, &e.name)?;
                let path = join(&dir, &e.name);
                if path == CONTROL_DIR {
                    continue;
                }
                let child_rel = if rel.is_empty() {
                    e.name.clone()
                } else {
                    format!("{rel}/{}", e.name)
                };
                if out.len() >= MAX_WALK_ENTRIES {
                    return Err(self.sb.fail(
                        ErrorCode::Quota,
                        op,
                        format!("{root}: more than {MAX_WALK_ENTRIES} entries"),
                    ));
                }
                if e.file_type == FileType::Directory {
                    stack.push((path.clone(), child_rel.clone()));
                }
                out.push(WalkEntry {
                    path,
                    rel: child_rel,
                    file_type: e.file_type,
                    size: e.size,
                    mode: e.mode,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// `sha256:<hex>` of every regular file among `entries`: from one tree
    /// listing when the backend declares `list_tree`, else by reading each
    /// file. A file gone meanwhile has no digest.
    pub(crate) async fn digests(
        &self,
        op: Operation,
        root: &str,
        entries: &[WalkEntry],
    ) -> Result<BTreeMap<String, String>> {
        let b = self.sb.backend();
        let mut out = BTreeMap::new();
        let is_dir_root = entries.first().is_none_or(|e| !e.rel.is_empty());
        if is_dir_root && let Some(tree) = b.tree_list_ops() {
            let listing = tree
                .list_tree(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", root)
                        .map_err(|e| self.sb.error(op, e))?,
                    MAX_WALK_ENTRIES * 2,
                )
                .await
                .map_err(|e| self.sb.error(op, e))?;
            if listing.complete {
                for leaf in listing.entries {
                    if let corral_backend::TreeEntryKind::File { sha256, .. } = leaf.kind {
                        out.insert(join(root, &leaf.path), sha256);
                    }
                }
                return Ok(out);
            }
        }
        for e in entries.iter().filter(|e| e.file_type == FileType::File) {
            let at = corral_backend::sandbox_path("path", &e.path)
                .map_err(|err| self.sb.error(op, err))?;
            match b.files().read(self.sb.id(), &at).await {
                Ok(bytes) => {
                    out.insert(e.path.clone(), sha256_of(&bytes));
                }
                Err(err) if err.code() == ErrorCode::NotFound => {}
                Err(err) => return Err(self.sb.error(op, err)),
            }
        }
        Ok(out)
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
