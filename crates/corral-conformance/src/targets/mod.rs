//! The in-tree targets, and finding one by name: each backend's target
//! serves both suites (the contract suite through a provider over the
//! backend, the SDK suite through the backend itself, with the checks it
//! declares it cannot pass, each with its reason); `minimal` serves the
//! contract suite only, and [`Relayed`] the SDK suite only.
//!
//! | target | SDK run live | declared unsupported through the SDK |
//! |---|---|---|
//! | `memory` | no | `gitPush` (its simulated shell has no git), `httpProbe` (its previews are `memory://` URLs) |
//! | `local` | no | `gitPush` / `httpProbe` only where this host lacks `git` / `python3` |
//! | `linux` | yes | likewise (its sandboxes run the host's programs), and `previews` where the backend declares none |
//! | `docker` | yes | `gitPush` (the test image has no git) |
//! | `remote` ([`Relayed`]) | yes | what the served backend's target declares |
//!
//! The `minimal` target narrows a *contract* provider to the contract's
//! minimum; the SDK suite runs on backends, so it has no SDK target.

mod declared;
mod docker;
mod inventory;
mod linux;
mod local;
pub mod loopback;
mod memory;
mod minimal;
mod relayed;

pub use docker::{DockerTarget, DockerTargetError};
pub use inventory::backend_inventory;
pub use linux::{LinuxTarget, LinuxTargetError};
pub use local::{LocalTarget, LocalTargetError};
pub use memory::{MemoryTarget, memory_egress};
pub use minimal::MinimalTarget;
pub use relayed::Relayed;

use corral_contract::{ConformanceCase, SandboxError};
use corral_registry::ConformanceTarget as Named;

use crate::report::{Observer, Report, Unobserved};
use crate::sdk::{SdkCase, SdkConformanceError, SdkReport, run_sdk_target_observed};
use crate::suite::run_observed;
use crate::target::SdkTarget;

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
    /// Opens the in-tree target the registry calls `target`.
    pub fn open(target: Named) -> Result<Self, TargetError> {
        Ok(match target {
            Named::Memory => Self::Memory(MemoryTarget::new()),
            Named::Minimal => Self::Minimal(MinimalTarget::new()),
            Named::Local => Self::Local(LocalTarget::new()?),
            Named::Linux => Self::Linux(LinuxTarget::new()?),
            Named::Docker => Self::Docker(DockerTarget::connect_blocking()?),
        })
    }

    /// Which of the registry's conformance targets this is.
    pub fn target(&self) -> Named {
        match self {
            Self::Memory(_) => Named::Memory,
            Self::Minimal(_) => Named::Minimal,
            Self::Local(_) => Named::Local,
            Self::Linux(_) => Named::Linux,
            Self::Docker(_) => Named::Docker,
        }
    }

    /// The target's name: the registry's.
    pub fn name(&self) -> &'static str {
        self.target().name()
    }

    /// Runs the contract suite against the target. The SDK suite has its
    /// own entry point ([`Self::run_sdk`]): there is no way to ask this one
    /// for it and get an empty contract report back.
    pub async fn run(&self) -> Result<Report, SandboxError> {
        self.run_observed(&mut Unobserved).await
    }

    /// [`Self::run`], telling `observer` of each case as it settles.
    pub async fn run_observed(
        &self,
        observer: &mut dyn Observer<ConformanceCase>,
    ) -> Result<Report, SandboxError> {
        match self {
            Self::Memory(t) => run_observed(t, observer).await,
            Self::Minimal(t) => run_observed(t, observer).await,
            Self::Local(t) => run_observed(t, observer).await,
            Self::Linux(t) => run_observed(t, observer).await,
            Self::Docker(t) => run_observed(t, observer).await,
        }
    }

    /// The target as an SDK target; `None` for `minimal`, which narrows a
    /// contract provider and has no backend of its own to run the SDK on.
    pub fn sdk(&self) -> Option<&dyn SdkTarget> {
        match self {
            Self::Memory(t) => Some(t),
            Self::Local(t) => Some(t),
            Self::Linux(t) => Some(t),
            Self::Docker(t) => Some(t),
            Self::Minimal(_) => None,
        }
    }

    /// Runs the SDK suite against the target with the options it declares;
    /// `None` for `minimal` (see [`Self::sdk`]).
    pub async fn run_sdk(&self) -> Option<Result<SdkReport, SdkConformanceError>> {
        self.run_sdk_observed(&mut Unobserved).await
    }

    /// [`Self::run_sdk`], telling `observer` of each case as it settles.
    pub async fn run_sdk_observed(
        &self,
        observer: &mut dyn Observer<SdkCase>,
    ) -> Option<Result<SdkReport, SdkConformanceError>> {
        match self.sdk() {
            Some(target) => Some(run_sdk_target_observed(target, observer).await),
            None => None,
        }
    }
}

/// Why [`parse`] or [`by_name`] found no target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No target has this name.
    #[error("unknown backend {name:?}; known backends: {}", Named::names())]
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

/// The registry's conformance target called `name` (one of
/// [`Named::ALL`]), or why there is none.
pub fn parse(name: &str) -> Result<Named, TargetError> {
    Named::from_name(name).ok_or_else(|| TargetError::Unknown {
        name: name.to_string(),
    })
}

/// The in-tree target called `name`, opened: one of the registry's
/// conformance targets ([`Named::ALL`]).
pub fn by_name(name: &str) -> Result<BuiltinTarget, TargetError> {
    BuiltinTarget::open(parse(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_found_by_name() {
        for named in Named::ALL {
            let name = named.name();
            match by_name(name) {
                Ok(target) => {
                    assert_eq!(target.name(), name);
                    assert_eq!(target.target(), named);
                }
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
