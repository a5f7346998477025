//! A sandbox's user namespace, from the host's side of `create`: claim a
//! range, give the writable root to it, map the init's namespace, and bind
//! the `host` image's directories (idmapped where the kernel can).

use std::path::Path;

use corral_backend::{BackendError, ErrorCode, Result};

use super::idmap::{self, Bound};
use super::{ownership, ranges};
use crate::protocol::HostDir;
use crate::spawn::Started;

/// What [`prepare`] set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    /// The sandbox's range.
    pub range: ranges::IdRange,
    /// Whether every host directory is an idmapped mount (`false` when
    /// any fell back to a plain bind, or there are none).
    pub idmapped: bool,
}

/// Sets up sandbox `id`'s user namespace around its waiting init
/// `started`, before the go-ahead: `root` is the host directory behind the
/// sandbox's `/`, `upper` the overlay's upper directory of a layered image
/// (`None` for the `host` image, whose `host_dirs` are bound here).
pub fn prepare(
    id: &str,
    started: &mut Started,
    root: &Path,
    upper: Option<&Path>,
    host_dirs: &[HostDir],
) -> Result<Prepared> {
    let failed = |what: &str, e: std::io::Error| {
        BackendError::new(ErrorCode::Unavailable, format!("sandbox {id}: {what}: {e}"))
    };
    let Some(range) = started.range else {
        return Err(failed(
            "starting its init",
            std::io::Error::other("the init was started without an id range"),
        ));
    };
    ownership::shift_tree(upper.unwrap_or(root), range)
        .map_err(|e| failed("giving the root to its id range", e))?;
    let dir = std::fs::File::open(root).map_err(|e| failed("opening the root", e))?;
    let userns = crate::spawn::map_user_namespace(started, range, dir)
        .map_err(|e| failed("mapping the user namespace", e))?;
    let mut idmapped = !host_dirs.is_empty();
    for d in host_dirs.iter().filter(|d| d.symlink.is_none()) {
        let target = root.join(d.path.trim_start_matches('/'));
        let bound = idmap::bind_read_only(Path::new(&d.path), &target, &userns)
            .map_err(|e| failed(&format!("binding {}", d.path), e))?;
        idmapped &= bound == Bound::Idmapped;
    }
    Ok(Prepared { range, idmapped })
}
