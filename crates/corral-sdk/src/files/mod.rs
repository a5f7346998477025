//! `sandbox.files()`: the file primitives every backend has, and the calls
//! the SDK core builds on them once for every backend — `edit`, `upload`
//! and `download`, `search`, `watch`, and `mark`/`changes`.
//!
//! Paths are absolute POSIX paths inside the sandbox. Every failure is a
//! [`SandboxError`](crate::SandboxError) whose operation is `files.<call>`
//! and whose message names the path.

mod changes;
mod edit;
mod search;
mod transfer;
mod walk;
mod watch;

use corral_backend::{BackendError, ErrorCode};

pub use changes::{Changes, Mark, MarkEntry};
pub use corral_backend::{DirEntry, FileStat, FileType};
pub use edit::{EditOptions, EditOutcome, MAX_EDIT_BYTES};
pub use search::{DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_RESULTS, SearchMatch, SearchOptions};
pub use transfer::{CHUNK_BYTES, TransferSummary};
pub use walk::MAX_WALK_ENTRIES;
pub use watch::{DEFAULT_WATCH_INTERVAL, WatchEvent, WatchEventKind, WatchOptions, Watcher};

use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// The SDK's own control directory in every sandbox (process records live
/// under it). Tree walks (`search`, `watch`, `mark`) never descend into it.
pub const CONTROL_DIR: &str = "/.corral";

/// Default permission bits of a written file.
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// The file calls of one sandbox, from [`Sandbox::files`].
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    pub(crate) sb: &'a Sandbox,
}

impl Sandbox {
    /// The file calls of this sandbox.
    pub fn files(&self) -> Files<'_> {
        Files { sb: self }
    }
}

/// The parent directory of an absolute path (`None` for `/`).
pub(crate) fn parent_of(path: &str) -> Option<&str> {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return None;
    }
    match trimmed.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&trimmed[..i]),
        None => None,
    }
}

/// `dir` joined with `name`.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

impl Files<'_> {
    fn op(&self, op: Operation) -> impl Fn(BackendError) -> crate::SandboxError + '_ {
        move |e| self.sb.error(op, e)
    }

    /// The whole content of the file at `path`.
    pub async fn read(&self, path: &str) -> Result<Vec<u8>> {
        let b = self.sb.backend();
        b.files()
            .read(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesRead))?,
            )
            .await
            .map_err(self.op(Operation::FilesRead))
    }

    /// The file at `path` as UTF-8 text; `invalid_input` when it is not UTF-8.
    pub async fn read_text(&self, path: &str) -> Result<String> {
        let bytes = self.read(path).await?;
        String::from_utf8(bytes).map_err(|_| {
            self.sb.fail(
                ErrorCode::InvalidInput,
                Operation::FilesRead,
                format!("{path}: not UTF-8 text"),
            )
        })
    }

    /// Up to `len` bytes of `path` from `offset` (fewer only at EOF). Uses
    /// the backend's ranged read where it declares one, else reads the whole
    /// file and slices it.
    pub async fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let b = self.sb.backend();
        if let Some(ranged) = b.files().ranged() {
            return ranged
                .read_range(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", path)
                        .map_err(self.op(Operation::FilesReadRange))?,
                    offset,
                    len,
                )
                .await
                .map_err(self.op(Operation::FilesReadRange));
        }
        let all = b
            .files()
            .read(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesReadRange))?,
            )
            .await
            .map_err(self.op(Operation::FilesReadRange))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(all.len());
        let end = start
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(all.len());
        Ok(all[start..end].to_vec())
    }

    /// Creates or replaces the file at `path` with mode `0o644`, creating
    /// missing parent directories.
    pub async fn write(&self, path: &str, bytes: impl AsRef<[u8]>) -> Result<()> {
        self.write_with_mode(path, bytes, DEFAULT_FILE_MODE).await
    }

    /// Creates or replaces the file at `path` with permission bits `mode`,
    /// creating missing parent directories (unless the backend was opened
    /// with the hint that its `write` does that itself,
    /// [`crate::ProviderHints::write_creates_parents`]).
    pub async fn write_with_mode(
        &self,
        path: &str,
        bytes: impl AsRef<[u8]>,
        mode: u32,
    ) -> Result<()> {
        self.write_op(Operation::FilesWrite, path, bytes.as_ref(), mode)
            .await
    }

    pub(crate) async fn write_op(
        &self,
        op: Operation,
        path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> Result<()> {
        if mode & !0o7777 != 0 {
            return Err(self.sb.fail(
                ErrorCode::InvalidInput,
                op,
                format!("{path}: mode {mode:o} has bits outside 7777"),
            ));
        }
        let b = self.sb.backend();
        if !self.sb.hints().write_creates_parents
            && let Some(parent) = parent_of(path)
            && parent != "/"
        {
            b.files()
                .mkdir(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", parent).map_err(self.op(op))?,
                    true,
                )
                .await
                .map_err(self.op(op))?;
        }
        self.write_into_dir(op, path, bytes, mode).await
    }

    /// Writes the file at `path` whose parent directory the caller has just
    /// made: no `mkdir` (`mode` within `0o7777`).
    pub(crate) async fn write_into_dir(
        &self,
        op: Operation,
        path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> Result<()> {
        let b = self.sb.backend();
        b.files()
            .write(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path).map_err(self.op(op))?,
                bytes,
                Some(mode),
            )
            .await
            .map_err(self.op(op))
    }

    /// The entries of the directory at `path`, sorted by name.
    pub async fn list(&self, path: &str) -> Result<Vec<DirEntry>> {
        let b = self.sb.backend();
        b.files()
            .list(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesList))?,
            )
            .await
            .map_err(self.op(Operation::FilesList))
    }

    /// Metadata of `path` (a final symlink is not followed).
    pub async fn stat(&self, path: &str) -> Result<FileStat> {
        let b = self.sb.backend();
        b.files()
            .stat(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesStat))?,
            )
            .await
            .map_err(self.op(Operation::FilesStat))
    }

    /// Whether anything (a file, a directory, a symlink…) is at `path`.
    pub async fn exists(&self, path: &str) -> Result<bool> {
        let b = self.sb.backend();
        let path = corral_backend::sandbox_path("path", path)
            .map_err(|e| self.sb.error(Operation::FilesExists, e))?;
        match b.files().stat(self.sb.id(), &path).await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(self.sb.error(Operation::FilesExists, e)),
        }
    }

    /// Removes a file or symlink, or (with `recursive`) a directory tree.
    /// `not_found` when nothing is there.
    pub async fn remove(&self, path: &str, recursive: bool) -> Result<()> {
        let b = self.sb.backend();
        b.files()
            .remove(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesRemove))?,
                recursive,
            )
            .await
            .map_err(self.op(Operation::FilesRemove))
    }

    /// Creates the directory `path` and its missing ancestors; no error
    /// when it exists already.
    pub async fn mkdir(&self, path: &str) -> Result<()> {
        let b = self.sb.backend();
        b.files()
            .mkdir(
                self.sb.id(),
                &corral_backend::sandbox_path("path", path)
                    .map_err(self.op(Operation::FilesMkdir))?,
                true,
            )
            .await
            .map_err(self.op(Operation::FilesMkdir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_and_joins() {
        assert_eq!(parent_of("/a/b"), Some("/a"));
        assert_eq!(parent_of("/a"), Some("/"));
        assert_eq!(parent_of("/a/b/"), Some("/a"));
        assert_eq!(parent_of("/"), None);
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
    }
}
