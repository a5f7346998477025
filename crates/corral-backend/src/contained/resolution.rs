//! What a symlink or `..` that would leave the root means: refused, or
//! clamped to the root.

use rustix::fs::ResolveFlags;

/// How a path is resolved against the root, the one thing in which a
/// sandbox's view of its files differs between backends.
///
/// Both refuse procfs magic links, never leave the root and never open what
/// they resolve before its type is known; they differ only in what an
/// escape attempt *means*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resolution {
    /// `RESOLVE_BENEATH`: the root is a directory of the host, and a `..`
    /// above it, an absolute symlink or a relative symlink climbing out is
    /// refused as [`ContainmentReason::OutsideRoot`](super::ContainmentReason::OutsideRoot).
    /// The contract's contained reads and the local backend resolve this way.
    #[default]
    Beneath,
    /// `RESOLVE_IN_ROOT`: the root is the sandbox's `/`, as a process inside
    /// it sees it: an absolute symlink is resolved from the root, and `..` at
    /// the root stays at the root (as `chroot` does). Nothing resolves
    /// outside the root; a symlink planted by the sandbox means what it
    /// means inside. The linux backend resolves this way over its merged root.
    InRoot,
}

impl Resolution {
    /// The `openat2` resolve flags of this resolution (magic links refused).
    #[must_use]
    pub const fn flags(self) -> ResolveFlags {
        match self {
            Self::Beneath => ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS),
            Self::InRoot => ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS),
        }
    }

    /// A stable snake_case name, for logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Beneath => "beneath",
            Self::InRoot => "in_root",
        }
    }
}
