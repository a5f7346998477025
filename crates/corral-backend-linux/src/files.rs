//! The file primitives, from the host, through the sandbox's root.
//!
//! Sandbox path `/x/y` is `<sandbox>/fs/root/x/y` on the host: the root is
//! the tmpfs (or merged overlay) mounted in the state directory *before* the
//! init entered its own mount namespace, so the host sees exactly what the
//! sandbox writes (no `/proc/<pid>/root` magic link is ever used). The
//! primitives are the shared contained host-directory file system
//! ([`corral_backend::contained_fs`]) resolving
//! [`in the root`](Resolution::InRoot): a symlink planted by the sandbox
//! resolves as the sandbox sees it, never on the host. What the host creates
//! is owned by the sandbox root's owner, so root inside may change it.
//!
//! The `host` image's read-only directories (`/usr`, `/lib*`, the curated
//! `/etc` and the host pieces bound beneath it) are mounted on that root in
//! the host's mount namespace, and the sandbox's mount namespace is a copy
//! of it: a file reads the same bytes from either side, and a write into a
//! read-only part fails with `invalid_input` saying so. What the host does
//! not see: the sandbox's own `/dev` and `/proc`.

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::contained::Resolution;
use corral_backend::contained_fs::{ContainedFs, ContainedFsSource, Ownership, SplitPath};
use corral_backend::{OwnedWriteOps, Result, RunAs, SandboxPath};

use crate::state::{State, require_meta};

/// The file primitives of the linux backend: those of
/// [`ContainedFsSource`], over each sandbox's root.
#[derive(Debug, Clone)]
pub struct LinuxFiles {
    pub(crate) state: Arc<State>,
}

impl ContainedFsSource for LinuxFiles {
    fn open_fs(&self, id: &str) -> Result<ContainedFs> {
        sandbox_fs(&self.state, id)
    }
}

/// The file system of live sandbox `id`.
pub(crate) fn sandbox_fs(state: &State, id: &str) -> Result<ContainedFs> {
    require_meta(state, id)?;
    ContainedFs::open(
        &crate::userns::rootless::files_root(state, id),
        id,
        Resolution::InRoot,
        Ownership::RootOwner,
    )
}

/// Who owns what a write for `owner` makes: root's files are the sandbox
/// root's (the range's first id), the user's are its uid and gid inside.
fn ownership_of(owner: RunAs) -> Ownership {
    match owner {
        RunAs::Root => Ownership::RootOwner,
        RunAs::User => Ownership::RootOwnerPlus {
            uid: crate::sandbox_user::USER_UID,
            gid: crate::sandbox_user::USER_GID,
        },
    }
}

impl LinuxFiles {
    /// Runs `f` on sandbox `id`'s file system, creating for `owner`.
    async fn as_owner<T: Send + 'static>(
        &self,
        id: &str,
        path: &SandboxPath,
        owner: RunAs,
        f: impl FnOnce(&ContainedFs, &SplitPath) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.state.check_run_as(Some(owner))?;
        let (state, id, path) = (self.state.clone(), id.to_owned(), SplitPath::from(path));
        crate::blocking::blocking(move || {
            let fs = sandbox_fs(&state, &id)?.with_ownership(ownership_of(owner));
            f(&fs, &path)
        })
        .await
    }
}

#[async_trait]
impl OwnedWriteOps for LinuxFiles {
    async fn write_as(
        &self,
        id: &str,
        path: &SandboxPath,
        bytes: &[u8],
        mode: Option<u32>,
        owner: RunAs,
    ) -> Result<()> {
        let bytes = bytes.to_vec();
        self.as_owner(id, path, owner, move |fs, p| Ok(fs.write(p, &bytes, mode)?))
            .await
    }

    async fn mkdir_as(
        &self,
        id: &str,
        path: &SandboxPath,
        parents: bool,
        owner: RunAs,
    ) -> Result<()> {
        self.as_owner(id, path, owner, move |fs, p| Ok(fs.mkdir(p, parents)?))
            .await
    }
}
