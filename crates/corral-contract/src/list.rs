//! `listDir` and `listProjectDir`: enumerations under a mount root.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ProtocolViolation;
use crate::{Digest, FileSize, InstanceId, MaxEntries, SandboxPath};

/// `listDir`: enumerate the regular files under `root`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The mount root to enumerate.
    pub root: SandboxPath,
    /// The most entries the caller accepts (≤ 100,000).
    pub max_entries: MaxEntries,
}

/// One regular file of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirEntry {
    /// The file's absolute path, strictly under the root.
    pub path: SandboxPath,
    /// Its size in bytes.
    pub size: FileSize,
    /// The SHA-256 of its content.
    pub sha256: Digest,
}

/// `listDir`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirResult {
    /// The regular files, in any order.
    pub entries: Vec<ListDirEntry>,
}

fn check_paths<'a>(
    paths: impl Iterator<Item = &'a SandboxPath>,
    count: usize,
    root: &SandboxPath,
    max_entries: MaxEntries,
) -> Result<(), ProtocolViolation> {
    if count as u64 > max_entries.get() {
        return Err(ProtocolViolation::new(
            "entries",
            format!("at most {max_entries} entries (max_entries)"),
            format!("{count} entries"),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, path) in paths.enumerate() {
        if !path.starts_with(root) || path == root {
            return Err(ProtocolViolation::new(
                format!("entries[{i}].path"),
                format!("a path strictly under {root}"),
                path.as_str(),
            ));
        }
        if !seen.insert(path) {
            return Err(ProtocolViolation::new(
                format!("entries[{i}].path"),
                "a path listed once",
                format!("{path} listed again"),
            ));
        }
    }
    Ok(())
}

impl ListDirResult {
    /// The Runner's check: at most `max_entries` entries, each strictly under
    /// the root, none twice.
    pub fn validate_against(&self, request: &ListDirRequest) -> Result<(), ProtocolViolation> {
        check_paths(
            self.entries.iter().map(|e| &e.path),
            self.entries.len(),
            &request.root,
            request.max_entries,
        )
    }
}

/// `listProjectDir`: a complete leaf enumeration under `root`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProjectDirRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The mount root to enumerate.
    pub root: SandboxPath,
    /// The most entries the caller accepts (≤ 100,000).
    pub max_entries: MaxEntries,
}

/// One leaf of a project listing: a regular file with its size and digest,
/// or a special file *named*, never omitted. Directories are not leaves (an
/// empty directory does not appear). Wire form tagged by `kind`:
/// `{"kind":"file","path":…,"size":…,"sha256":…}`, `{"kind":"symlink","path":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProjectEntry {
    /// A regular file.
    File {
        /// Its path.
        path: SandboxPath,
        /// Its size.
        size: FileSize,
        /// The SHA-256 of its content.
        sha256: Digest,
    },
    /// A symbolic link.
    Symlink {
        /// Its path.
        path: SandboxPath,
    },
    /// A Git submodule (a gitlink).
    Submodule {
        /// Its path.
        path: SandboxPath,
    },
    /// A character or block device.
    Device {
        /// Its path.
        path: SandboxPath,
    },
    /// A Unix socket.
    Socket {
        /// Its path.
        path: SandboxPath,
    },
    /// A FIFO.
    Fifo {
        /// Its path.
        path: SandboxPath,
    },
    /// Any other non-directory leaf.
    Other {
        /// Its path.
        path: SandboxPath,
    },
}

impl ProjectEntry {
    /// The leaf's path.
    pub fn path(&self) -> &SandboxPath {
        match self {
            Self::File { path, .. }
            | Self::Symlink { path }
            | Self::Submodule { path }
            | Self::Device { path }
            | Self::Socket { path }
            | Self::Fifo { path }
            | Self::Other { path } => path,
        }
    }
}

/// `listProjectDir`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProjectDirResult {
    /// Every leaf.
    pub entries: Vec<ProjectEntry>,
    /// Must be `true`: an incomplete listing is a protocol failure.
    pub complete: bool,
}

impl ListProjectDirResult {
    /// The Runner's check: `complete: true`, at most `max_entries` entries,
    /// each strictly under the root, none twice.
    pub fn validate_against(
        &self,
        request: &ListProjectDirRequest,
    ) -> Result<(), ProtocolViolation> {
        if !self.complete {
            return Err(ProtocolViolation::new("complete", "true", "false"));
        }
        check_paths(
            self.entries.iter().map(ProjectEntry::path),
            self.entries.len(),
            &request.root,
            request.max_entries,
        )
    }
}
