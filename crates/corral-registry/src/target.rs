//! [`ConformanceTarget`]: the names of the in-tree conformance targets,
//! and the backend that opens each one.

use std::fmt;

use crate::kind::BackendKind;

/// An in-tree conformance target (`corral conformance --backend NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConformanceTarget {
    /// The memory backend behind the contract adapter: the oracle.
    Memory,
    /// The contract's minimum provider, made from the memory oracle by
    /// narrowing its envelope (contract suite only: it has no backend of
    /// its own for the SDK suite to run on).
    Minimal,
    /// The local backend, on a temporary state directory.
    Local,
    /// The linux backend, on a temporary state directory.
    Linux,
    /// The docker backend, on the engine of `DOCKER_HOST`.
    Docker,
}

impl ConformanceTarget {
    /// Every target, in the order help texts list them.
    pub const ALL: [ConformanceTarget; 5] = [
        ConformanceTarget::Memory,
        ConformanceTarget::Minimal,
        ConformanceTarget::Local,
        ConformanceTarget::Linux,
        ConformanceTarget::Docker,
    ];

    /// The target's name: its backend's, but for `minimal`.
    pub const fn name(self) -> &'static str {
        match self {
            ConformanceTarget::Minimal => "minimal",
            ConformanceTarget::Memory
            | ConformanceTarget::Local
            | ConformanceTarget::Linux
            | ConformanceTarget::Docker => self.backend().name(),
        }
    }

    /// The backend that opens the target.
    pub const fn backend(self) -> BackendKind {
        match self {
            ConformanceTarget::Memory | ConformanceTarget::Minimal => BackendKind::Memory,
            ConformanceTarget::Local => BackendKind::Local,
            ConformanceTarget::Linux => BackendKind::Linux,
            ConformanceTarget::Docker => BackendKind::Docker,
        }
    }

    /// The target named `name`, if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Every name, comma-separated, in [`Self::ALL`]'s order.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl fmt::Display for ConformanceTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_listed_in_help_order() {
        assert_eq!(
            ConformanceTarget::names(),
            "memory, minimal, local, linux, docker"
        );
        assert_eq!(ConformanceTarget::from_name("vmware"), None);
    }
}
