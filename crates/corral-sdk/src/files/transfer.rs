//! `files.upload` and `files.download`: single files and whole trees between
//! host paths and sandbox paths.
//!
//! - Regular files keep their permission bits (`0o7777`) both ways.
//! - Directories are created as needed; their own modes are not carried
//!   (the file primitives create directories with the backend's default).
//! - Symlinks are never followed, in either direction, so a transfer never
//!   leaves the tree it was given; since the file primitives cannot create
//!   a symlink, symlinks and special files (fifos, sockets, devices) are
//!   skipped and named in [`TransferSummary::skipped`].
//! - Downloads read in [`CHUNK_BYTES`] ranges when the backend declares
//!   `read_range`, writing each to the host file as it arrives. Uploads
//!   stream each host file in one `write` call per file (the primitives
//!   have no append).
//! - A download never writes through a symlink that already exists on the
//!   host at a destination path: it fails with `invalid_input` instead.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use corral_backend::{ErrorCode, FileType};
use tokio::io::AsyncWriteExt;

use super::{Files, join};
use crate::Operation;
use crate::error::Result;

/// Bytes per ranged read of a download.
pub const CHUNK_BYTES: u64 = 4 << 20;

/// What a transfer copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferSummary {
    /// Regular files copied.
    pub files: usize,
    /// Directories created or walked.
    pub dirs: usize,
    /// Bytes of file content copied.
    pub bytes: u64,
    /// Paths (on the side read from) skipped: symlinks and special files.
    pub skipped: Vec<String>,
}

fn io_fail(
    files: &Files<'_>,
    op: Operation,
    what: &Path,
    e: &std::io::Error,
) -> crate::SandboxError {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => ErrorCode::NotFound,
        _ => ErrorCode::Io,
    };
    files.sb.fail(code, op, format!("{}: {e}", what.display()))
}

impl Files<'_> {
    /// Copies the host file or directory tree at `host_path` to
    /// `sandbox_path` (the exact destination, created with its parents).
    pub async fn upload(
        &self,
        host_path: impl AsRef<Path>,
        sandbox_path: &str,
    ) -> Result<TransferSummary> {
        const OP: Operation = Operation::FilesUpload;
        let host_path = host_path.as_ref();
        let meta = tokio::fs::symlink_metadata(host_path)
            .await
            .map_err(|e| io_fail(self, OP, host_path, &e))?;
        let mut summary = TransferSummary::default();
        if meta.is_file() {
            self.upload_file(
                host_path,
                sandbox_path,
                meta.permissions().mode(),
                false,
                &mut summary,
            )
            .await?;
            return Ok(summary);
        }
        if !meta.is_dir() {
            return Err(self.sb.fail(
                ErrorCode::InvalidInput,
                OP,
                format!("{}: not a regular file or a directory", host_path.display()),
            ));
        }
        let mut stack = vec![(host_path.to_path_buf(), sandbox_path.to_string())];
        while let Some((dir, target)) = stack.pop() {
            self.mkdir(&target)
                .await
                .map_err(|e| self.sb.fail(e.code, OP, e.message))?;
            summary.dirs += 1;
            let mut rd = tokio::fs::read_dir(&dir)
                .await
                .map_err(|e| io_fail(self, OP, &dir, &e))?;
            let mut children = Vec::new();
            while let Some(entry) = rd
                .next_entry()
                .await
                .map_err(|e| io_fail(self, OP, &dir, &e))?
            {
                children.push(entry);
            }
            children.sort_by_key(|e| e.file_name());
            for entry in children {
                let path = entry.path();
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    return Err(self.sb.fail(
                        ErrorCode::InvalidInput,
                        OP,
                        format!("{}: the name is not UTF-8", path.display()),
                    ));
                };
                let dest = join(&target, &name);
                let meta = tokio::fs::symlink_metadata(&path)
                    .await
                    .map_err(|e| io_fail(self, OP, &path, &e))?;
                if meta.is_dir() {
                    stack.push((path, dest));
                } else if meta.is_file() {
                    self.upload_file(&path, &dest, meta.permissions().mode(), true, &mut summary)
                        .await?;
                } else {
                    summary.skipped.push(path.display().to_string());
                }
            }
        }
        Ok(summary)
    }

    async fn upload_file(
        &self,
        host: &Path,
        dest: &str,
        mode: u32,
        in_made_dir: bool,
        summary: &mut TransferSummary,
    ) -> Result<()> {
        const OP: Operation = Operation::FilesUpload;
        let bytes = tokio::fs::read(host)
            .await
            .map_err(|e| io_fail(self, OP, host, &e))?;
        if in_made_dir {
            // The walk made `dest`'s directory just before: no second mkdir.
            self.write_into_dir(OP, dest, &bytes, mode & 0o7777).await?;
        } else {
            self.write_op(OP, dest, &bytes, mode & 0o7777).await?;
        }
        summary.files += 1;
        summary.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Copies the sandbox file or directory tree at `sandbox_path` to
    /// `host_path` (the exact destination, created with its parents).
    pub async fn download(
        &self,
        sandbox_path: &str,
        host_path: impl AsRef<Path>,
    ) -> Result<TransferSummary> {
        const OP: Operation = Operation::FilesDownload;
        let host_path = host_path.as_ref();
        let entries = self.walk(OP, sandbox_path).await?;
        let mut summary = TransferSummary::default();
        let root_is_file = entries.first().is_some_and(|e| e.rel.is_empty());
        if root_is_file {
            let e = &entries[0];
            if e.file_type != FileType::File {
                return Err(self.sb.fail(
                    ErrorCode::InvalidInput,
                    OP,
                    format!("{sandbox_path}: not a regular file or a directory"),
                ));
            }
            if let Some(parent) = host_path.parent() {
                self.host_mkdir(OP, parent).await?;
            }
            self.download_file(&e.path, host_path, e.mode, &mut summary)
                .await?;
            return Ok(summary);
        }
        self.host_mkdir(OP, host_path).await?;
        summary.dirs += 1;
        for e in &entries {
            let dest: PathBuf = host_path.join(&e.rel);
            match e.file_type {
                FileType::Directory => {
                    self.host_mkdir(OP, &dest).await?;
                    summary.dirs += 1;
                }
                FileType::File => {
                    self.download_file(&e.path, &dest, e.mode, &mut summary)
                        .await?;
                }
                FileType::Symlink
                | FileType::Fifo
                | FileType::Socket
                | FileType::CharDevice
                | FileType::BlockDevice => summary.skipped.push(e.path.clone()),
            }
        }
        Ok(summary)
    }

    async fn host_mkdir(&self, op: Operation, dir: &Path) -> Result<()> {
        if let Ok(m) = tokio::fs::symlink_metadata(dir).await
            && m.file_type().is_symlink()
        {
            return Err(self.sb.fail(
                ErrorCode::InvalidInput,
                op,
                format!(
                    "{}: is a symlink on the host; not written through",
                    dir.display()
                ),
            ));
        }
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io_fail(self, op, dir, &e))
    }

    async fn download_file(
        &self,
        src: &str,
        dest: &Path,
        mode: u32,
        summary: &mut TransferSummary,
    ) -> Result<()> {
        const OP: Operation = Operation::FilesDownload;
        if let Ok(m) = tokio::fs::symlink_metadata(dest).await
            && !m.is_file()
        {
            return Err(self.sb.fail(
                ErrorCode::InvalidInput,
                OP,
                format!(
                    "{}: exists on the host and is not a regular file",
                    dest.display()
                ),
            ));
        }
        let mut out = tokio::fs::File::create(dest)
            .await
            .map_err(|e| io_fail(self, OP, dest, &e))?;
        let b = self.sb.backend();
        if let Some(ranged) = b.files().ranged() {
            let mut offset = 0u64;
            loop {
                let chunk = ranged
                    .read_range(
                        self.sb.id(),
                        &corral_backend::sandbox_path("path", src)
                            .map_err(|e| self.sb.error(OP, e))?,
                        offset,
                        CHUNK_BYTES,
                    )
                    .await
                    .map_err(|e| self.sb.error(OP, e))?;
                out.write_all(&chunk)
                    .await
                    .map_err(|e| io_fail(self, OP, dest, &e))?;
                offset += chunk.len() as u64;
                if (chunk.len() as u64) < CHUNK_BYTES {
                    break;
                }
            }
            summary.bytes += offset;
        } else {
            let bytes = b
                .files()
                .read(
                    self.sb.id(),
                    &corral_backend::sandbox_path("path", src).map_err(|e| self.sb.error(OP, e))?,
                )
                .await
                .map_err(|e| self.sb.error(OP, e))?;
            out.write_all(&bytes)
                .await
                .map_err(|e| io_fail(self, OP, dest, &e))?;
            summary.bytes += bytes.len() as u64;
        }
        out.flush().await.map_err(|e| io_fail(self, OP, dest, &e))?;
        drop(out);
        tokio::fs::set_permissions(dest, std::fs::Permissions::from_mode(mode & 0o7777))
            .await
            .map_err(|e| io_fail(self, OP, dest, &e))?;
        summary.files += 1;
        Ok(())
    }
}
