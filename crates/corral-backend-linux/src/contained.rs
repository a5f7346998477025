//! Physically contained reads (`ContainedReadOps`): `path` must lie
//! lexically under `allowed_root`; `allowed_root` is resolved by the kernel
//! beneath the sandbox root (`fs/root`, `RESOLVE_IN_ROOT`), pinned by a
//! descriptor, and the read is then resolved beneath that descriptor by
//! [`corral_backend::contained::ContainedRoot`], so no symlink or `..` can
//! take it outside `allowed_root`.

use std::os::fd::{AsRawFd, OwnedFd};

use async_trait::async_trait;
use corral_backend::contained::{ContainedReadError, ContainedRoot, ContainmentReason};
use corral_backend::{
    BackendError, ContainedReadFailure, ContainedReadOps, ErrorCode, Result, path,
};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::LinuxBackend;
use crate::state::{State, require_meta};

/// How every sandbox path is resolved from the host: inside the root, never
/// through a `/proc` magic link.
pub(crate) const RESOLVE: ResolveFlags = ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS);

/// The sandbox root of live sandbox `id`, as an `O_PATH` descriptor.
pub(crate) fn open_root(state: &State, id: &str) -> Result<OwnedFd> {
    require_meta(state, id)?;
    rustix::fs::open(
        state.root_dir(id),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| BackendError::sandbox_not_found(id))
}

/// Opens `comps` (sandbox path components) beneath `root` with `flags`.
pub(crate) fn open_beneath(
    root: &OwnedFd,
    comps: &[String],
    flags: OFlags,
) -> std::result::Result<OwnedFd, Errno> {
    let rel = if comps.is_empty() {
        ".".to_string()
    } else {
        comps.join("/")
    };
    corral_backend::contained::openat2_retrying(
        root,
        rel.as_str(),
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        RESOLVE,
    )
}

fn read_contained(
    state: &State,
    id: &str,
    allowed_root: &str,
    p: &str,
    max_bytes: u64,
) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
    let refused = |reason| ContainedReadFailure::Refused(ContainedReadError::new(reason, p));
    let allowed = path::normalize("allowed_root", allowed_root)?;
    let target = path::normalize("path", p)?;
    let Some(rest) = target.strip_prefix(allowed.as_slice()) else {
        return Err(refused(ContainmentReason::OutsideRoot));
    };
    let root = open_root(state, id)?;
    let dir = open_beneath(&root, &allowed, OFlags::PATH | OFlags::DIRECTORY).map_err(|e| {
        refused(match e {
            Errno::XDEV => ContainmentReason::OutsideRoot,
            Errno::NOENT | Errno::NOTDIR => ContainmentReason::NotFound,
            Errno::LOOP => ContainmentReason::SymlinkLoop,
            e => ContainmentReason::Io {
                errno: e.raw_os_error(),
            },
        })
    })?;
    // The contained root is opened through the descriptor just resolved, so
    // nothing can swap `allowed_root` between the check and the read.
    let by_fd = format!("/proc/thread-self/fd/{}", dir.as_raw_fd());
    let contained = ContainedRoot::open(std::path::Path::new(&by_fd)).map_err(|_| {
        ContainedReadFailure::Backend(BackendError::new(
            ErrorCode::Unavailable,
            "read_contained needs /proc to pin the allowed root",
        ))
    })?;
    drop(dir);
    let rel = if rest.is_empty() {
        ".".to_string()
    } else {
        rest.join("/")
    };
    contained
        .read(&rel, max_bytes)
        .map_err(|e| refused(e.reason))
}

#[async_trait]
impl ContainedReadOps for LinuxBackend {
    async fn read_contained(
        &self,
        id: &str,
        allowed_root: &str,
        path: &str,
        max_bytes: u64,
    ) -> std::result::Result<Vec<u8>, ContainedReadFailure> {
        let (state, id, allowed_root, path) = (
            self.state().clone(),
            id.to_owned(),
            allowed_root.to_owned(),
            path.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            read_contained(&state, &id, &allowed_root, &path, max_bytes)
        })
        .await
        .map_err(|e| {
            ContainedReadFailure::Backend(BackendError::new(
                ErrorCode::Provider,
                format!("linux backend task: {e}"),
            ))
        })?
    }
}
