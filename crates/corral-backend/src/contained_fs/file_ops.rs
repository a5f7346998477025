//! The `files` primitives of every backend whose sandboxes' files are
//! contained host directories: written once, here, over [`ContainedFs`].

use async_trait::async_trait;

use super::{ContainedFs, SplitPath};
use crate::error::Result;
use crate::files::{DirEntry, FileOps, FileStat, RangedRead};
use crate::path::SandboxPath;

/// A backend's way to the file system of one of its sandboxes. Implementing
/// it gives the backend [`FileOps`] and [`RangedRead`]: every path is split
/// into its components ([`SplitPath`]), the sandbox's file system opened, and the
/// primitive run on a blocking thread.
pub trait ContainedFsSource: Clone + Send + Sync + 'static {
    /// The file system of live sandbox `id`.
    ///
    /// # Errors
    ///
    /// `not_found` when there is no such sandbox.
    fn open_fs(&self, id: &str) -> Result<ContainedFs>;
}

/// Runs `f` on sandbox `id`'s file system with `p` split, on a blocking thread.
async fn on_fs<S: ContainedFsSource, T: Send + 'static>(
    source: &S,
    id: &str,
    p: &SandboxPath,
    f: impl FnOnce(&ContainedFs, &SplitPath) -> Result<T> + Send + 'static,
) -> Result<T> {
    let (source, id, p) = (source.clone(), id.to_owned(), SplitPath::from(p));
    crate::task::blocking("file task", move || f(&source.open_fs(&id)?, &p)).await
}

#[async_trait]
impl<S: ContainedFsSource> FileOps for S {
    async fn read(&self, id: &str, p: &SandboxPath) -> Result<Vec<u8>> {
        on_fs(self, id, p, |fs, p| Ok(fs.read(p)?)).await
    }

    async fn write(
        &self,
        id: &str,
        p: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<()> {
        let bytes = bytes.to_vec();
        on_fs(self, id, p, move |fs, p| Ok(fs.write(p, &bytes, mode)?)).await
    }

    async fn list(&self, id: &str, p: &SandboxPath) -> Result<Vec<DirEntry>> {
        on_fs(self, id, p, |fs, p| Ok(fs.list(p)?)).await
    }

    async fn stat(&self, id: &str, p: &SandboxPath) -> Result<FileStat> {
        on_fs(self, id, p, |fs, p| Ok(fs.stat(p)?)).await
    }

    async fn remove(&self, id: &str, p: &SandboxPath, recursive: bool) -> Result<()> {
        on_fs(self, id, p, move |fs, p| Ok(fs.remove(p, recursive)?)).await
    }

    async fn mkdir(&self, id: &str, p: &SandboxPath, parents: bool) -> Result<()> {
        on_fs(self, id, p, move |fs, p| Ok(fs.mkdir(p, parents)?)).await
    }

    fn ranged(&self) -> Option<&dyn RangedRead> {
        Some(self)
    }
}

#[async_trait]
impl<S: ContainedFsSource> RangedRead for S {
    async fn read_range(
        &self,
        id: &str,
        p: &SandboxPath,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        on_fs(self, id, p, move |fs, p| Ok(fs.read_range(p, offset, len)?)).await
    }
}
