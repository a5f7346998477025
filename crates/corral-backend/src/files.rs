//! The `files` primitives: read, write, list, stat, remove, mkdir, the
//! optional ranged read, and the optional owned writes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::path::SandboxPath;

use crate::error::Result;
use crate::exec::RunAs;

/// The type of a file system entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (never followed by `stat` or `list`).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl FileType {
    /// Classifies host metadata (without following symlinks).
    pub fn from_std(ft: std::fs::FileType) -> Self {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_symlink() {
            FileType::Symlink
        } else if ft.is_dir() {
            FileType::Directory
        } else if ft.is_fifo() {
            FileType::Fifo
        } else if ft.is_socket() {
            FileType::Socket
        } else if ft.is_char_device() {
            FileType::CharDevice
        } else if ft.is_block_device() {
            FileType::BlockDevice
        } else {
            FileType::File
        }
    }
}

/// What `stat` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// The absolute path asked about.
    pub path: String,
    /// Its type (a symlink is reported as a symlink, not followed).
    pub file_type: FileType,
    /// Size in bytes (a symlink's is the length of its target).
    pub size: u64,
    /// Permission bits (`0o7777` mask).
    pub mode: u32,
    /// Last modification, epoch milliseconds.
    pub modified_at_ms: u64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    /// The entry's name within its directory.
    pub name: String,
    /// Its absolute path.
    pub path: String,
    /// Its type.
    pub file_type: FileType,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
}

/// The file primitives of one backend. Paths are the contract's
/// [`SandboxPath`]: absolute, normalized and bounded where the caller's text
/// came in ([`crate::path::sandbox_path`]), never checked again here.
#[async_trait]
pub trait FileOps: Send + Sync {
    /// The whole file. `not_found` when it is missing; `invalid_input` for a directory.
    async fn read(&self, id: &str, path: &SandboxPath) -> Result<Vec<u8>>;

    /// Creates or replaces a file with `bytes`; `mode` sets the permission
    /// bits (default `0o644`). A missing parent is `not_found`, unless the
    /// backend creates it (an adapter whose `write` does says so to the SDK
    /// core with `corral_sdk::ProviderHints::write_creates_parents`).
    async fn write(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()>;

    /// The entries of a directory, sorted by name.
    async fn list(&self, id: &str, path: &SandboxPath) -> Result<Vec<DirEntry>>;

    /// Metadata of one entry, without following a final symlink.
    async fn stat(&self, id: &str, path: &SandboxPath) -> Result<FileStat>;

    /// Removes a file, a symlink, or (with `recursive`) a directory tree.
    /// `not_found` when nothing is there.
    async fn remove(&self, id: &str, path: &SandboxPath, recursive: bool) -> Result<()>;

    /// Creates a directory (`parents`: and its missing ancestors, and no
    /// error if it exists).
    async fn mkdir(&self, id: &str, path: &SandboxPath, parents: bool) -> Result<()>;

    /// The optional ranged read; `Some` exactly when the backend declares `read_range`.
    fn ranged(&self) -> Option<&dyn RangedRead> {
        None
    }
}

/// The optional ranged read.
#[async_trait]
pub trait RangedRead: Send + Sync {
    /// Up to `len` bytes from `offset`: all of them, unless EOF comes first.
    async fn read_range(
        &self,
        id: &str,
        path: &SandboxPath,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>>;
}

/// The optional owned writes: `write` and `mkdir` whose new files and
/// directories belong to whom a command would run as ([`RunAs`]), so that
/// a command run as the sandbox's user may rewrite what was written for
/// it. A backend has them where it declares
/// [`crate::Capabilities::run_as_user`] and can give files to that user
/// ([`crate::Backend::owned_write_ops`]).
#[async_trait]
pub trait OwnedWriteOps: Send + Sync {
    /// [`FileOps::write`], the file owned by `owner`.
    async fn write_as(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
        owner: RunAs,
    ) -> Result<()>;

    /// [`FileOps::mkdir`], each directory it makes owned by `owner`.
    async fn mkdir_as(
        &self,
        id: &str,
        path: &SandboxPath,
        parents: bool,
        owner: RunAs,
    ) -> Result<()>;
}
