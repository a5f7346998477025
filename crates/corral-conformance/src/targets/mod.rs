//! The in-tree targets, and finding one by name.

mod docker;
mod inventory;
mod linux;
mod local;
pub mod loopback;
mod memory;
mod minimal;

pub use docker::{DockerTarget, DockerTargetError};
pub use inventory::backend_inventory;
pub use linux::{LinuxTarget, LinuxTargetError};
pub use local::{LocalTarget, LocalTargetError};
pub use memory::{MemoryTarget, memory_egress};
pub use minimal::MinimalTarget;

use corral_contract::SandboxError;

use crate::report::Report;
use crate::suite::run;

/// The names [`by_name`] knows, in the order help texts list them.
pub const NAMES: &[&str] = &["memory", "minimal", "local", "linux", "docker"];

/// One of the in-tree targets.
#[derive(Debug)]
pub enum BuiltinTarget {
    /// See [`MemoryTarget`].
    Memory(MemoryTarget),
    /// See [`MinimalTarget`].
    Minimal(MinimalTarget),
    /// See [`LocalTarget`].
    Local(LocalTarget),
    /// See [`LinuxTarget`].
    Linux(LinuxTarget),
    /// See [`DockerTarget`].
    Docker(DockerTarget),
}

impl BuiltinTarget {
    /// The target's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            Self::Minimal(_) => "minimal",
            Self::Local(_) => "local",
            Self::Linux(_) => "linux",
            Self::Docker(_) => "docker",
        }
    }

    /// Runs the contract suite against the target. The SDK suite has its
    /// own entry point and report ([`Self::run_sdk`]): there is no way to
    /// ask this one for it and get an empty contract report back.
    pub async fn run(&self) -> Result<Report, SandboxError> {
        match self {
            Self::Memory(t) => run(t).await,
            Self::Minimal(t) => run(t).await,
            Self::Local(t) => run(t).await,
            Self::Linux(t) => run(t).await,
            Self::Docker(t) => run(t).await,
        }
    }
}

/// Why [`by_name`] found no target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No target has this name.
    #[error("unknown backend {name:?}; known backends: memory, minimal, local, linux, docker")]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The local target could not be set up.
    #[error("the local target: {0}")]
    Local(#[from] LocalTargetError),
    /// The linux target could not be set up (or this host cannot make
    /// linux sandboxes).
    #[error("the linux target: {0}")]
    Linux(#[from] LinuxTargetError),
    /// The docker target could not be set up (no engine answers, or the
    /// test image cannot be made).
    #[error("the docker target: {0}")]
    Docker(#[from] DockerTargetError),
}

/// The in-tree target called `name`: `memory`, `minimal`, `local`, `linux`
/// or `docker`.
pub fn by_name(name: &str) -> Result<BuiltinTarget, TargetError> {
    match name {
        "memory" => Ok(BuiltinTarget::Memory(MemoryTarget::new())),
        "minimal" => Ok(BuiltinTarget::Minimal(MinimalTarget::new())),
        "local" => Ok(BuiltinTarget::Local(LocalTarget::new()?)),
        "linux" => Ok(BuiltinTarget::Linux(LinuxTarget::new()?)),
        "docker" => Ok(BuiltinTarget::Docker(DockerTarget::connect_blocking()?)),
        other => Err(TargetError::Unknown {
            name: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_found_by_name() {
        for name in NAMES {
            match by_name(name) {
                Ok(target) => assert_eq!(target.name(), *name),
                Err(TargetError::Linux(LinuxTargetError::Unavailable(reason))) => {
                    println!("SKIP the linux target: {reason}");
                }
                Err(TargetError::Docker(DockerTargetError::Unavailable(reason))) => {
                    println!("SKIP the docker target: {reason}");
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
        let err = by_name("vmware").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown backend \"vmware\"; known backends: memory, minimal, local, linux, docker"
        );
    }

    #[test]
    fn the_local_state_directory_is_removed_on_drop() {
        let target = LocalTarget::new().unwrap();
        let dir = target.state_dir().to_path_buf();
        assert!(dir.is_dir());
        drop(target);
        assert!(!dir.exists());
    }
}
