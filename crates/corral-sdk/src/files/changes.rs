//! `files.mark` and `files.changes`: what was added, modified or removed
//! under a directory since a recorded state.

use std::collections::BTreeMap;

use corral_backend::FileType;
use serde::{Deserialize, Serialize};

use super::Files;
use crate::Operation;
use crate::error::Result;

/// The recorded state of one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkEntry {
    /// Its type (symlinks are not followed).
    pub file_type: FileType,
    /// Size in bytes (0 for directories, whose listed size means nothing).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// `sha256:<hex>` of a regular file's content.
    pub digest: Option<String>,
}

/// The state of a tree at one moment, from [`Files::mark`]. Serializable,
/// so it can be kept across processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// The directory it records.
    pub root: String,
    /// Every entry under it (the SDK's control directory excluded), by
    /// absolute path.
    pub entries: BTreeMap<String, MarkEntry>,
}

/// What changed since a [`Mark`]; each list sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// Paths that exist now and did not then.
    pub added: Vec<String>,
    /// Paths whose type, size, mode or content changed.
    pub modified: Vec<String>,
    /// Paths that existed then and do not now.
    pub removed: Vec<String>,
}

impl Changes {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

/// The differences from `old` to `new`.
pub(crate) fn diff(
    old: &BTreeMap<String, MarkEntry>,
    new: &BTreeMap<String, MarkEntry>,
) -> Changes {
    let mut c = Changes::default();
    for (path, entry) in new {
        match old.get(path) {
            None => c.added.push(path.clone()),
            Some(before) if before != entry => c.modified.push(path.clone()),
            Some(_) => {}
        }
    }
    c.removed = old
        .keys()
        .filter(|p| !new.contains_key(*p))
        .cloned()
        .collect();
    c
}

impl Files<'_> {
    pub(crate) async fn state(
        &self,
        op: Operation,
        root: &str,
    ) -> Result<BTreeMap<String, MarkEntry>> {
        let entries = self.walk(op, root).await?;
        let digests = self.digests(op, root, &entries).await?;
        Ok(entries
            .into_iter()
            .map(|e| {
                let is_dir = e.file_type == FileType::Directory;
                let entry = MarkEntry {
                    file_type: e.file_type,
                    size: if is_dir { 0 } else { e.size },
                    mode: e.mode,
                    digest: digests.get(&e.path).cloned(),
                };
                (e.path, entry)
            })
            .collect())
    }

    /// Records the state of the tree under `root`: every entry's type,
    /// size, mode and (for files) content digest.
    pub async fn mark(&self, root: &str) -> Result<Mark> {
        Ok(Mark {
            root: root.to_string(),
            entries: self.state(Operation::FilesMark, root).await?,
        })
    }

    /// What was added, modified or removed under the mark's root since
    /// `mark` was taken.
    pub async fn changes(&self, mark: &Mark) -> Result<Changes> {
        let now = self.state(Operation::FilesChanges, &mark.root).await?;
        Ok(diff(&mark.entries, &now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size: u64, digest: &str) -> MarkEntry {
        MarkEntry {
            file_type: FileType::File,
            size,
            mode: 0o644,
            digest: Some(digest.into()),
        }
    }

    #[test]
    fn diff_sorts_added_modified_removed() {
        let old: BTreeMap<_, _> = [
            ("/a".to_string(), file(1, "x")),
            ("/b".to_string(), file(1, "y")),
            ("/c".to_string(), file(1, "z")),
        ]
        .into();
        let new: BTreeMap<_, _> = [
            ("/a".to_string(), file(1, "x")),
            ("/b".to_string(), file(1, "Y")),
            ("/d".to_string(), file(2, "w")),
        ]
        .into();
        let c = diff(&old, &new);
        assert_eq!(c.added, vec!["/d"]);
        assert_eq!(c.modified, vec!["/b"]);
        assert_eq!(c.removed, vec!["/c"]);
        assert!(diff(&new, &new).is_empty());
    }
}
