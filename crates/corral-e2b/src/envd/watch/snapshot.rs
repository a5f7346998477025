//! What a watcher sees: a snapshot of the watched directory (its children,
//! or its whole tree when recursive), taken with the backend's `list` and
//! `stat`, and the events a diff of two snapshots can honestly tell.
//!
//! A diff tells a created entry (`EVENT_TYPE_CREATE`, then
//! `EVENT_TYPE_WRITE` when a new file already holds bytes), a file whose
//! size or modification time changed (`EVENT_TYPE_WRITE`), changed
//! permission bits (`EVENT_TYPE_CHMOD`) and a removed entry
//! (`EVENT_TYPE_REMOVE`). A rename is seen as a remove and a create; an
//! entry whose type changed, as a remove and a create. A change undone
//! between two polls is not seen.

use std::collections::BTreeMap;

use corral_backend::{FileOps, FileType};
use serde_json::{Value, json};

use crate::envd::entry::entry_json;
use crate::envd::tree_walk::{Found, walk};
use crate::error::E2bResult;

/// The most entries one snapshot holds; a watched tree with more is
/// refused (when the watch starts) or ends the watch (when it grows).
pub const MAX_WATCH_ENTRIES: usize = 5_000;

/// One entry as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its type.
    pub file_type: FileType,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Last modification, epoch milliseconds (0 for directories, whose
    /// times are not compared).
    pub modified_ms: u64,
}

/// Every entry under the watched root, by its path relative to the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The entries.
    pub entries: BTreeMap<String, Seen>,
}

/// What the snapshot covers.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The sandbox.
    pub sandbox: String,
    /// The watched directory.
    pub root: corral_backend::SandboxPath,
    /// Whether subdirectories are watched too.
    pub recursive: bool,
    /// Whether events carry the entry's `EntryInfo`.
    pub include_entry: bool,
}

impl Scope {
    fn absolute(&self, relative: &str) -> String {
        if self.root.is_root() {
            format!("/{relative}")
        } else {
            format!("{}/{relative}", self.root)
        }
    }
}

/// A snapshot of `scope`'s directory now.
pub async fn take(files: &dyn FileOps, scope: &Scope) -> E2bResult<Snapshot> {
    let depth = if scope.recursive { u32::MAX } else { 1 };
    let found = walk(files, &scope.sandbox, &scope.root, depth, MAX_WATCH_ENTRIES).await?;
    let mut entries = BTreeMap::new();
    for Found {
        relative, entry: e, ..
    } in found
    {
        let mut seen = Seen {
            file_type: e.file_type,
            size: e.size,
            mode: e.mode,
            modified_ms: 0,
        };
        if e.file_type != FileType::Directory {
            let at = scope
                .root
                .join(&relative)
                .map_err(|err| crate::E2bError::invalid("path", err.broken_rule()))?;
            match files.stat(&scope.sandbox, &at).await {
                Ok(stat) => {
                    seen.size = stat.size;
                    seen.mode = stat.mode;
                    seen.modified_ms = stat.modified_at_ms;
                }
                // Gone between the listing and the stat: not seen now.
                Err(err) if err.code() == corral_backend::ErrorCode::NotFound => continue,
                Err(err) => return Err(err.into()),
            }
        }
        entries.insert(relative, seen);
    }
    Ok(Snapshot { entries })
}

/// One event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The entry appeared.
    Create,
    /// A file's bytes changed.
    Write,
    /// The entry is gone.
    Remove,
    /// Its permission bits changed.
    Chmod,
}

impl EventType {
    /// The `EventType` enum name.
    pub fn name(self) -> &'static str {
        match self {
            EventType::Create => "EVENT_TYPE_CREATE",
            EventType::Write => "EVENT_TYPE_WRITE",
            EventType::Remove => "EVENT_TYPE_REMOVE",
            EventType::Chmod => "EVENT_TYPE_CHMOD",
        }
    }
}

/// One change between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path relative to the watched root.
    pub name: String,
    /// What happened.
    pub kind: EventType,
    /// The entry now (`None` when removed).
    pub now: Option<Seen>,
}

impl Change {
    /// The `FilesystemEvent` JSON of this change.
    pub fn to_json(&self, scope: &Scope) -> Value {
        let mut v = json!({ "name": self.name, "type": self.kind.name() });
        if scope.include_entry
            && let Some(seen) = &self.now
        {
            let modified = (seen.modified_ms > 0).then_some(seen.modified_ms);
            v["entry"] = entry_json(
                &scope.absolute(&self.name),
                seen.file_type,
                seen.size,
                seen.mode,
                modified,
            );
        }
        v
    }
}

/// The changes from `old` to `new`: removals first (deepest first), then
/// creations, writes and permission changes in path order.
pub fn diff(old: &Snapshot, new: &Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    for (name, was) in old.entries.iter().rev() {
        let kept = new
            .entries
            .get(name)
            .is_some_and(|now| now.file_type == was.file_type);
        if !kept {
            changes.push(Change {
                name: name.clone(),
                kind: EventType::Remove,
                now: None,
            });
        }
    }
    for (name, now) in &new.entries {
        let change = |kind| Change {
            name: name.clone(),
            kind,
            now: Some(now.clone()),
        };
        match old.entries.get(name) {
            Some(was) if was.file_type == now.file_type => {
                let is_dir = now.file_type == FileType::Directory;
                if !is_dir && (was.size != now.size || was.modified_ms != now.modified_ms) {
                    changes.push(change(EventType::Write));
                }
                if was.mode != now.mode {
                    changes.push(change(EventType::Chmod));
                }
            }
            _ => {
                changes.push(change(EventType::Create));
                if now.file_type == FileType::File && now.size > 0 {
                    changes.push(change(EventType::Write));
                }
            }
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size: u64, modified_ms: u64, mode: u32) -> Seen {
        Seen {
            file_type: FileType::File,
            size,
            mode,
            modified_ms,
        }
    }

    fn snap(entries: &[(&str, Seen)]) -> Snapshot {
        Snapshot {
            entries: entries
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
        }
    }

    fn kinds(changes: &[Change]) -> Vec<(&str, EventType)> {
        changes.iter().map(|c| (c.name.as_str(), c.kind)).collect()
    }

    #[test]
    fn a_diff_tells_creates_writes_chmods_and_removes() {
        let old = snap(&[
            ("a", file(1, 10, 0o644)),
            ("b", file(1, 10, 0o644)),
            ("c", file(1, 10, 0o644)),
        ]);
        let new = snap(&[
            ("a", file(1, 11, 0o644)),
            ("b", file(1, 10, 0o600)),
            ("d", file(0, 12, 0o644)),
            ("e", file(3, 12, 0o644)),
        ]);
        assert_eq!(
            kinds(&diff(&old, &new)),
            vec![
                ("c", EventType::Remove),
                ("a", EventType::Write),
                ("b", EventType::Chmod),
                ("d", EventType::Create),
                ("e", EventType::Create),
                ("e", EventType::Write),
            ]
        );
        assert!(diff(&new, &new).is_empty());
    }

    #[test]
    fn a_type_change_is_a_remove_and_a_create() {
        let dir = Seen {
            file_type: FileType::Directory,
            size: 0,
            mode: 0o755,
            modified_ms: 0,
        };
        let old = snap(&[("x", file(0, 1, 0o644))]);
        let new = snap(&[("x", dir)]);
        assert_eq!(
            kinds(&diff(&old, &new)),
            vec![("x", EventType::Remove), ("x", EventType::Create)]
        );
    }
}
