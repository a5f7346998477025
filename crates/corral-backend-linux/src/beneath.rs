//! How every sandbox path is resolved from the host: beneath a descriptor
//! of the sandbox's root, inside it, never through a `/proc` magic link.
//! Low-level: it knows descriptors and path components, not sandboxes.

use std::os::fd::OwnedFd;

use corral_backend::contained::Resolution;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// The resolution of every sandbox path: inside the root, never through a
/// `/proc` magic link.
pub(crate) const RESOLVE: ResolveFlags = Resolution::InRoot.flags();

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
