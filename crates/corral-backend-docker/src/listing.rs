//! Complete leaf listings (`TreeListOps`) of a sandbox directory, walked
//! from the host through descriptors beneath the container's overlay2
//! merged root ([`crate::contained::open_root`]), never following a
//! symlink.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

use async_trait::async_trait;
use corral_backend::walk::{self, Step, Visit};
use corral_backend::{
    BackendError, ErrorCode, Result, TreeEntry, TreeEntryKind, TreeListOps, TreeListing, path,
};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::DockerBackend;

fn is_submodule(v: &Visit<'_>) -> bool {
    let Ok(Some(dir)) = walk::open_dir_at(v.dir, v.name) else {
        return false;
    };
    rustix::fs::statat(&dir, ".git", AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
}

fn digest(v: &Visit<'_>) -> std::io::Result<Option<(u64, String)>> {
    let Some(mut file) = v.open_file()? else {
        return Ok(None);
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some((
        size,
        format!("sha256:{}", hex::encode(hasher.finalize())),
    )))
}

fn leaf(v: &Visit<'_>) -> std::io::Result<Option<TreeEntryKind>> {
    Ok(Some(match v.file_type() {
        FileType::Directory if !is_submodule(v) => return Ok(None),
        FileType::Directory => TreeEntryKind::Submodule,
        FileType::RegularFile => match digest(v)? {
            Some((size, sha256)) => TreeEntryKind::File { size, sha256 },
            None => TreeEntryKind::Other,
        },
        FileType::Symlink => TreeEntryKind::Symlink,
        FileType::Fifo => TreeEntryKind::Fifo,
        FileType::Socket => TreeEntryKind::Socket,
        FileType::CharacterDevice | FileType::BlockDevice => TreeEntryKind::Device,
        FileType::Unknown => TreeEntryKind::Other,
    }))
}

fn list_under(root: OwnedFd, dir: &str, max_entries: usize) -> Result<TreeListing> {
    let comps = path::normalize("root", dir)?;
    let shown = format!("/{}", comps.join("/"));
    let rel = if comps.is_empty() {
        ".".to_string()
    } else {
        comps.join("/")
    };
    let opened = corral_backend::contained::openat2_retrying(
        &root,
        rel.as_str(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
    );
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) => {
            return Err(BackendError::invalid(format!(
                "list_tree {shown}: not a directory"
            )));
        }
        Err(Errno::NOENT) => {
            return Err(BackendError::new(
                ErrorCode::NotFound,
                format!("list_tree {shown}: no such directory"),
            ));
        }
        Err(e) => {
            return Err(BackendError::from_io(
                format!("list_tree {shown}"),
                &e.into(),
            ));
        }
    };
    let mut entries = Vec::new();
    let mut complete = true;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        let Some(kind) = leaf(v)? else {
            return Ok(Step::Descend);
        };
        if entries.len() >= max_entries {
            complete = false;
            return Ok(Step::Stop);
        }
        entries.push(TreeEntry {
            path: v.rel_lossy(),
            kind,
        });
        Ok(Step::Skip)
    };
    walk::walk(fd.as_fd(), &mut visit)
        .map_err(|e| BackendError::from_io(format!("list_tree {shown}"), &e))?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(TreeListing { entries, complete })
}

#[async_trait]
impl TreeListOps for DockerBackend {
    async fn list_tree(&self, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
        path::normalize("root", root)?;
        let fd = crate::contained::open_root(self, id).await?;
        let root = root.to_owned();
        tokio::task::spawn_blocking(move || list_under(fd, &root, max_entries))
            .await
            .map_err(|e| {
                BackendError::new(ErrorCode::Provider, format!("docker backend task: {e}"))
            })?
    }
}
