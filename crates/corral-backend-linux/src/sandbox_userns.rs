//! A sandbox's user namespace, from the host's side of `create`: claim a
//! range, give the writable root to it, map the init's namespace, and bind
//! the `host` image's directories (idmapped where the kernel can).

use std::path::{Path, PathBuf};

use corral_backend::{BackendError, CreateError, Result, SetupStep};

use crate::host::InitLink;
use crate::protocol::HostDir;
use crate::userns::idmap::{self, Bound};
use crate::userns::{ownership, ranges};

/// What [`prepare`] set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    /// The sandbox's range.
    pub range: ranges::IdRange,
    /// Whether every host directory is an idmapped mount (`false` when
    /// any fell back to a plain bind, or there are none).
    pub idmapped: bool,
}

/// Sets up sandbox `id`'s user namespace (id range `range`) around its
/// waiting init `init`, before the go-ahead: `root` is the host directory
/// behind the sandbox's `/` (for the `host` image, whose `host_dirs` are
/// bound here), or the overlay of a layered image's `layers` (topmost
/// first), mounted again on idmapped layers.
pub fn prepare(
    id: &str,
    init: &mut InitLink,
    range: ranges::IdRange,
    root: &Path,
    layers: &[PathBuf],
    host_dirs: &[HostDir],
) -> Result<Prepared> {
    let failed = |what: &str, e: std::io::Error| setup(id, format_args!("{what}: {e}"));
    let fs = root.parent().unwrap_or(root);
    let upper = fs.join("upper");
    let layered = !layers.is_empty();
    ownership::shift_tree(if layered { &upper } else { root }, range)
        .map_err(|e| failed("giving the root to its id range", e))?;
    let userns = crate::spawn::map_user_namespace(init, range)
        .map_err(|e| failed("mapping the user namespace", e))?;
    if layered {
        let idmapped = idmap::remount_overlay(root, layers, &fs.join("lower"), &upper, &userns)
            .map_err(|e| failed("mounting the image on idmapped layers", e))?;
        give_root(id, init, root)?;
        return Ok(Prepared { range, idmapped });
    }
    let mut idmapped = !host_dirs.is_empty();
    for d in host_dirs.iter().filter(|d| d.symlink.is_none()) {
        let target = root.join(d.path.trim_start_matches('/'));
        let bound = idmap::bind_read_only(Path::new(&d.path), &target, &userns)
            .map_err(|e| failed(&format!("binding {}", d.path), e))?;
        idmapped &= bound == Bound::Idmapped;
    }
    give_root(id, init, root)?;
    Ok(Prepared { range, idmapped })
}

/// Hands the init its root, opened as finally mounted.
fn give_root(id: &str, init: &mut InitLink, root: &Path) -> Result<()> {
    let dir =
        std::fs::File::open(root).map_err(|e| setup(id, format_args!("opening the root: {e}")))?;
    init.keep_root(dir);
    Ok(())
}

/// Setting up sandbox `id`'s user namespace failed with `detail`.
fn setup(id: &str, detail: impl std::fmt::Display) -> BackendError {
    CreateError::Setup {
        id: id.into(),
        step: SetupStep::UserNamespace,
        detail: detail.to_string(),
    }
    .into()
}
