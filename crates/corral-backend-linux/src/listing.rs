//! Complete leaf listings (`TreeListOps`) of a directory of the sandbox,
//! walked from the host through descriptors beneath the sandbox root, never
//! following a symlink. The walk is the local backend's.

use std::io::Read;
use std::os::fd::AsFd;

use async_trait::async_trait;
use corral_backend::{
    BackendError, Result, TreeEntry, TreeEntryKind, TreeListOps, TreeListing, path,
};
use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::LinuxBackend;
use crate::contained::{open_beneath, open_root};
use crate::state::State;
use corral_backend::walk::{self, Step, Visit};

/// A directory holding a regular `.git` file is a submodule.
fn is_submodule(v: &Visit<'_>) -> bool {
    let Ok(Some(dir)) = walk::open_dir_at(v.dir, v.name) else {
        return false;
    };
    rustix::fs::statat(&dir, ".git", AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
}

/// Size and `sha256:<hex>` of regular file `v`; `None` if it was replaced.
fn hash_file(v: &Visit<'_>) -> std::io::Result<Option<(u64, String)>> {
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

fn kind_of(v: &Visit<'_>) -> std::io::Result<Option<TreeEntryKind>> {
    Ok(Some(match v.file_type() {
        FileType::Directory if !is_submodule(v) => return Ok(None),
        FileType::Directory => TreeEntryKind::Submodule,
        FileType::RegularFile => match hash_file(v)? {
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

/// Every leaf under `root` in sandbox `id`, sorted by path; `complete:
/// false` when it stopped at `max_entries`. Empty directories are not leaves.
fn list_tree(state: &State, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
    let comps = path::normalize("root", root)?;
    let shown = format!("/{}", comps.join("/"));
    let sroot = open_root(state, id)?;
    let dir = match open_beneath(&sroot, &comps, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) => {
            return Err(BackendError::invalid(format!(
                "list_tree {shown}: not a directory"
            )));
        }
        Err(Errno::NOENT) => {
            return Err(BackendError::new(
                corral_backend::ErrorCode::NotFound,
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
    let mut entries: Vec<TreeEntry> = Vec::new();
    let mut complete = true;
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        let Some(kind) = kind_of(v)? else {
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
    walk::walk(dir.as_fd(), &mut visit)
        .map_err(|e| BackendError::from_io(format!("list_tree {shown}"), &e))?;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(TreeListing { entries, complete })
}

#[async_trait]
impl TreeListOps for LinuxBackend {
    async fn list_tree(&self, id: &str, root: &str, max_entries: usize) -> Result<TreeListing> {
        let (state, id, root) = (self.state().clone(), id.to_owned(), root.to_owned());
        crate::backend::blocking(move || list_tree(&state, &id, &root, max_entries)).await
    }
}
