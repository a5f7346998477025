//! The file primitives over the engine's archive API: a whole file or a
//! directory comes out as a tar stream, a file goes in as a one-entry tar
//! into its (existing) parent, `stat` is the archive's path-stat header.
//! The archive API cannot make or remove directories: `mkdir` and `remove`
//! run `mkdir` / `rm` in the sandbox.

use std::io::Read;

use async_trait::async_trait;
use bollard::Docker;
use bollard::errors::Error;
use bollard::query_parameters::{
    ContainerArchiveInfoOptions, DownloadFromContainerOptions, UploadToContainerOptions,
};
use bytes::Bytes;
use corral_backend::contained::ContainmentReason;
use corral_backend::error::{FileOp, FsCause, FsError};
use corral_backend::{
    BackendError, DirEntry, FileOps, FileStat, FileType, PlatformError, Result, SandboxPath,
};
use futures_util::TryStreamExt;
use rustix::io::Errno;

use crate::error::map_error;
use crate::labels;
use crate::mtime::parse_rfc3339_ms;
use crate::shell;

/// The file primitives of one engine connection.
#[derive(Debug, Clone)]
pub struct DockerFiles {
    docker: Docker,
}

impl DockerFiles {
    pub(crate) fn new(docker: Docker) -> Self {
        DockerFiles { docker }
    }

    /// The archive of `p` (a normalized path) in sandbox `id`, whole.
    async fn archive(&self, id: &str, p: &str, op: FileOp) -> Result<Vec<u8>> {
        let options = DownloadFromContainerOptions {
            path: p.to_string(),
        };
        let chunks: Vec<Bytes> = self
            .docker
            .download_from_container(id, Some(options))
            .try_collect()
            .await
            .map_err(|e| self.path_error(id, p, op, &e))?;
        Ok(chunks.concat())
    }

    /// A 404 of the archive API is about the container or the path; the
    /// engine's message says which. A component of the path that is not a
    /// directory is a missing path, as the contained backends resolve it.
    fn path_error(&self, id: &str, p: &str, op: FileOp, e: &Error) -> BackendError {
        if let Error::DockerResponseServerError {
            status_code: 404,
            message,
        } = e
        {
            if message.contains("No such container") {
                return BackendError::sandbox_not_found(id);
            }
            return missing_path(op, p);
        }
        if let Error::DockerResponseServerError {
            status_code: 400,
            message,
        } = e
            && message.contains("not a directory")
        {
            return missing_path(op, p);
        }
        map_error(&format!("{op} {p} in {id}"), e)
    }

    /// A 404 without a message (a `HEAD`): the sandbox or the path.
    async fn missing(&self, id: &str, p: &str, op: FileOp) -> BackendError {
        match self.docker.inspect_container(id, None).await {
            Err(Error::DockerResponseServerError {
                status_code: 404, ..
            }) => BackendError::sandbox_not_found(id),
            _ => missing_path(op, p),
        }
    }

    async fn stat_raw(&self, id: &str, p: &str, op: FileOp) -> Result<FileStat> {
        let options = ContainerArchiveInfoOptions {
            path: p.to_string(),
        };
        match self
            .docker
            .get_container_archive_info(id, Some(options))
            .await
        {
            Ok(st) => Ok(stat_of(p, &st)),
            Err(Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Err(self.missing(id, p, op).await),
            Err(e) => Err(self.path_error(id, p, op, &e)),
        }
    }
}

/// `op` on `p` found nothing there: the cause the contained backends give.
fn missing_path(op: FileOp, p: &str) -> BackendError {
    fail(op, p, FsCause::Refused(ContainmentReason::NotFound))
}

/// `cause` of `op` on sandbox path `p`.
fn fail(op: FileOp, p: &str, cause: FsCause) -> BackendError {
    FsError::new(op, p, cause).into()
}

/// `op` on `p` ran a command in the sandbox that failed with `stderr`.
fn command_failed(op: FileOp, p: &str, stderr: &str) -> BackendError {
    PlatformError::Io {
        what: format!("{op} {p}"),
        kind: std::io::ErrorKind::Other,
        detail: stderr.trim().to_string(),
    }
    .into()
}

fn check_id(id: &str) -> Result<()> {
    if labels::is_sandbox_id(id) {
        Ok(())
    } else {
        Err(BackendError::sandbox_not_found(id))
    }
}

/// Go's `os.FileMode` type bits, as the engine's path-stat header carries them.
const GO_DIR: u32 = 1 << 31;
const GO_SYMLINK: u32 = 1 << 27;
const GO_DEVICE: u32 = 1 << 26;
const GO_PIPE: u32 = 1 << 25;
const GO_SOCKET: u32 = 1 << 24;
const GO_CHAR_DEVICE: u32 = 1 << 21;
const GO_SETUID: u32 = 1 << 23;
const GO_SETGID: u32 = 1 << 22;
const GO_STICKY: u32 = 1 << 20;

fn stat_of(p: &str, st: &bollard::container::PathStatResponse) -> FileStat {
    let m = st.file_mode;
    let file_type = if m & GO_DIR != 0 {
        FileType::Directory
    } else if m & GO_SYMLINK != 0 {
        FileType::Symlink
    } else if m & GO_PIPE != 0 {
        FileType::Fifo
    } else if m & GO_SOCKET != 0 {
        FileType::Socket
    } else if m & GO_CHAR_DEVICE != 0 {
        FileType::CharDevice
    } else if m & GO_DEVICE != 0 {
        FileType::BlockDevice
    } else {
        FileType::File
    };
    let mut mode = m & 0o777;
    if m & GO_SETUID != 0 {
        mode |= 0o4000;
    }
    if m & GO_SETGID != 0 {
        mode |= 0o2000;
    }
    if m & GO_STICKY != 0 {
        mode |= 0o1000;
    }
    FileStat {
        path: p.to_string(),
        file_type,
        size: if file_type == FileType::Symlink {
            st.link_target.len() as u64
        } else {
            st.size.max(0) as u64
        },
        mode,
        modified_at_ms: st
            .modification_time
            .as_deref()
            .and_then(parse_rfc3339_ms)
            .unwrap_or(0),
    }
}

fn entry_type(t: tar::EntryType) -> FileType {
    use tar::EntryType as E;
    match t {
        E::Directory => FileType::Directory,
        E::Symlink => FileType::Symlink,
        E::Fifo => FileType::Fifo,
        E::Char => FileType::CharDevice,
        E::Block => FileType::BlockDevice,
        _ => FileType::File,
    }
}

fn tar_error(p: &str, e: &std::io::Error) -> BackendError {
    PlatformError::Malformed {
        what: p.to_string(),
        detail: format!("the engine sent a malformed archive ({e})"),
    }
    .into()
}

/// The parent directory and the name of a normalized path.
fn split(op: FileOp, p: &str) -> Result<(String, String)> {
    let p = corral_backend::sandbox_path("path", p)?;
    let comps: Vec<&str> = p.components().collect();
    let Some((name, parent)) = comps.split_last() else {
        return Err(fail(op, "/", FsCause::RootItself));
    };
    Ok((format!("/{}", parent.join("/")), (*name).to_owned()))
}

#[async_trait]
impl FileOps for DockerFiles {
    async fn read(&self, id: &str, p: &SandboxPath) -> Result<Vec<u8>> {
        let p = p.as_str();
        let mut current = p.to_owned();
        check_id(id)?;
        // Follow a final symlink, as reading a path does.
        for _ in 0..16 {
            let archive = self.archive(id, &current, FileOp::Read).await?;
            let mut tar = tar::Archive::new(archive.as_slice());
            let mut entries = tar.entries().map_err(|e| tar_error(&current, &e))?;
            let Some(entry) = entries.next() else {
                return Err(tar_error(&current, &std::io::Error::other("empty archive")));
            };
            let mut entry = entry.map_err(|e| tar_error(&current, &e))?;
            match entry.header().entry_type() {
                tar::EntryType::Directory => {
                    return Err(fail(FileOp::Read, p, FsCause::IsADirectory));
                }
                tar::EntryType::Symlink => {
                    let target = entry
                        .link_name()
                        .map_err(|e| tar_error(&current, &e))?
                        .map(|t| t.to_string_lossy().to_string())
                        .unwrap_or_default();
                    let (parent, _) = split(FileOp::Read, &current)?;
                    let joined = if target.starts_with('/') {
                        target
                    } else {
                        format!("{parent}/{target}")
                    };
                    current = corral_backend::sandbox_path("path", &joined)?.to_string();
                }
                _ => {
                    let mut out = Vec::with_capacity(entry.size() as usize);
                    entry
                        .read_to_end(&mut out)
                        .map_err(|e| tar_error(&current, &e))?;
                    return Ok(out);
                }
            }
        }
        Err(fail(
            FileOp::Read,
            p,
            FsCause::Refused(ContainmentReason::SymlinkLoop),
        ))
    }

    async fn write(
        &self,
        id: &str,
        p: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        let p = p.as_str();
        let (parent, name) = split(FileOp::Write, p)?;
        check_id(id)?;
        if let Some(m) = mode
            && m & !0o7777 != 0
        {
            return Err(fail(FileOp::Write, p, FsCause::BadMode { mode: m }));
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode.unwrap_or(0o644));
        header.set_mtime(corral_backend::now_ms() / 1000);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        let mut builder = tar::Builder::new(Vec::with_capacity(bytes.len() + 1024));
        builder
            .append_data(&mut header, &name, bytes)
            .map_err(|e| BackendError::from_io(format!("write {p}"), &e))?;
        let body = builder
            .into_inner()
            .map_err(|e| BackendError::from_io(format!("write {p}"), &e))?;
        let options = UploadToContainerOptions {
            path: parent.clone(),
            no_overwrite_dir_non_dir: Some("true".into()),
            ..UploadToContainerOptions::default()
        };
        match self
            .docker
            .upload_to_container(id, Some(options), bollard::body_full(body.into()))
            .await
        {
            Ok(()) => Ok(()),
            Err(Error::DockerResponseServerError {
                status_code: 404,
                message,
            }) if !message.contains("No such container") => {
                Err(missing_path(FileOp::Write, &parent))
            }
            Err(e) => Err(self.path_error(id, p, FileOp::Write, &e)),
        }
    }

    async fn list(&self, id: &str, p: &SandboxPath) -> Result<Vec<DirEntry>> {
        let dir = p.as_str().to_owned();
        let p = p.as_str();
        check_id(id)?;
        let archive = self.archive(id, &dir, FileOp::List).await?;
        let mut tar = tar::Archive::new(archive.as_slice());
        let mut out = Vec::new();
        let mut root_seen = false;
        for entry in tar.entries().map_err(|e| tar_error(&dir, &e))? {
            let entry = entry.map_err(|e| tar_error(&dir, &e))?;
            let header = entry.header();
            let raw = entry.path().map_err(|e| tar_error(&dir, &e))?;
            let rel = raw.to_string_lossy().trim_end_matches('/').to_string();
            if !root_seen {
                root_seen = true;
                if header.entry_type() != tar::EntryType::Directory {
                    return Err(fail(FileOp::List, p, FsCause::NotADirectory));
                }
                continue;
            }
            // Entries are `<dir name>/<child>[/...]`: keep direct children.
            let mut parts = rel.splitn(2, '/');
            let (_, Some(child)) = (parts.next(), parts.next()) else {
                continue;
            };
            if child.contains('/') || child.is_empty() {
                continue;
            }
            let file_type = entry_type(header.entry_type());
            out.push(DirEntry {
                name: child.to_string(),
                path: if dir == "/" {
                    format!("/{child}")
                } else {
                    format!("{dir}/{child}")
                },
                file_type,
                size: if file_type == FileType::File {
                    header.size().unwrap_or(0)
                } else {
                    0
                },
                mode: header.mode().unwrap_or(0) & 0o7777,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    async fn stat(&self, id: &str, p: &SandboxPath) -> Result<FileStat> {
        let p = p.as_str().to_owned();
        check_id(id)?;
        self.stat_raw(id, &p, FileOp::Stat).await
    }

    async fn remove(&self, id: &str, p: &SandboxPath, recursive: bool) -> Result<()> {
        let p = p.as_str().to_owned();
        check_id(id)?;
        if p == "/" {
            return Err(fail(FileOp::Remove, "/", FsCause::RootItself));
        }
        let st = self.stat_raw(id, &p, FileOp::Remove).await?;
        let argv: &[&str] = match (st.file_type, recursive) {
            (FileType::Directory, true) => &["rm", "-rf", "--", &p],
            (FileType::Directory, false) => &["rmdir", "--", &p],
            _ => &["rm", "-f", "--", &p],
        };
        let (code, stderr) = shell::run(&self.docker, id, argv).await?;
        match code {
            0 => Ok(()),
            _ if stderr.contains("not empty") => {
                Err(fail(FileOp::Remove, &p, FsCause::Os(Errno::NOTEMPTY)))
            }
            _ => Err(command_failed(FileOp::Remove, &p, &stderr)),
        }
    }

    async fn mkdir(&self, id: &str, p: &SandboxPath, parents: bool) -> Result<()> {
        let p = p.as_str().to_owned();
        check_id(id)?;
        let argv: &[&str] = if parents {
            &["mkdir", "-p", "--", &p]
        } else {
            &["mkdir", "--", &p]
        };
        let (code, stderr) = shell::run(&self.docker, id, argv).await?;
        match code {
            0 => Ok(()),
            _ if stderr.contains("No such file") => Err(missing_path(FileOp::Mkdir, &p)),
            _ if stderr.contains("Not a directory") => {
                Err(fail(FileOp::Mkdir, &p, FsCause::ExistsNotDirectory))
            }
            _ if stderr.contains("exists") => {
                Err(fail(FileOp::Mkdir, &p, FsCause::Os(Errno::EXIST)))
            }
            _ => Err(command_failed(FileOp::Mkdir, &p, &stderr)),
        }
    }
}
