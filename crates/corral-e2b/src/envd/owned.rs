//! Writes for a user: what `/files` and `MakeDir` make for `user` belongs
//! to the sandbox's user where the backend can give files to it
//! (`Backend::owned_write_ops`: linux, unless rootless), so a command run
//! as `user` may rewrite it; elsewhere, and for `root`, the plain
//! primitives (root's files).

use corral_backend::{FileOps, OwnedWriteOps, RunAs, SandboxPath};

use super::EnvdUser;
use crate::Inner;
use crate::error::E2bResult;

/// The write primitives for one user.
pub struct WritesFor<'a> {
    files: &'a dyn FileOps,
    owned: Option<&'a dyn OwnedWriteOps>,
}

impl<'a> WritesFor<'a> {
    /// The primitives writing for `user` on `inner`'s backend.
    pub fn of(inner: &'a Inner, user: EnvdUser) -> Self {
        let as_user = user.run_as(&inner.backend.capabilities()) == Some(RunAs::User);
        WritesFor {
            files: inner.backend.files(),
            owned: inner.backend.owned_write_ops().filter(|_| as_user),
        }
    }

    /// Creates or replaces a file.
    pub async fn write(&self, id: &str, path: &SandboxPath, bytes: &[u8]) -> E2bResult<()> {
        match self.owned {
            Some(owned) => owned.write_as(id, path, bytes, None, RunAs::User).await?,
            None => self.files.write(id, path, bytes, None).await?,
        }
        Ok(())
    }

    /// Makes a directory (and its missing parents).
    pub async fn mkdir(&self, id: &str, path: &SandboxPath) -> E2bResult<()> {
        match self.owned {
            Some(owned) => owned.mkdir_as(id, path, true, RunAs::User).await?,
            None => self.files.mkdir(id, path, true).await?,
        }
        Ok(())
    }
}
