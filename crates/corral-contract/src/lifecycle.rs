//! Instance states and the lifecycle gate.
//!
//! "An instance has exactly two states: `provisioning` and `active`. Every
//! operation names the states it accepts, and the Runner refuses a mismatch
//! as `SandboxLifecycleConflict{operation, expected, actual}` before calling
//! you."

use crate::error::{ConflictState, SandboxError};
use crate::macros::vocabulary;
use crate::operation::Operation;

vocabulary! {
    /// The state of a live instance.
    pub enum InstanceState: "state" {
        /// Allocated, mounts being staged; `writeFile` may target mounts and
        /// the output tree.
        Provisioning = "provisioning",
        /// Sealed and runnable; only the output tree stays writable.
        Active = "active",
    }
}

const ANY: &[InstanceState] = &[InstanceState::Provisioning, InstanceState::Active];
const PROVISIONING: &[InstanceState] = &[InstanceState::Provisioning];
const ACTIVE: &[InstanceState] = &[InstanceState::Active];

impl Operation {
    /// The instance states this operation accepts, from the operations table;
    /// `None` when the operation does not address a live instance
    /// (`capabilities`, `provision`, `cloneSnapshot`, `resume`,
    /// `destroySnapshot`, `cleanup`, and the non-member operations).
    ///
    /// `snapshot` additionally requires a durable instance; that is a
    /// retention check (`SandboxSnapshotForbidden`), not a state.
    pub const fn accepted_states(self) -> Option<&'static [InstanceState]> {
        match self {
            Self::WriteFile | Self::Destroy => Some(ANY),
            Self::Activate => Some(PROVISIONING),
            Self::BeginActiveWrite
            | Self::Execute
            | Self::ReadFile
            | Self::ReadFiles
            | Self::ListDir
            | Self::ListProjectDir
            | Self::Snapshot
            | Self::Release
            | Self::OpenProcess => Some(ACTIVE),
            Self::Capabilities
            | Self::Provision
            | Self::CloneSnapshot
            | Self::Resume
            | Self::DestroySnapshot
            | Self::Cleanup
            | Self::InstanceIdentity
            | Self::OpenProcessIdentity
            | Self::Rollback(_) => None,
        }
    }

    /// Whether the operation accepts an instance in `state` (always true for
    /// operations that do not address a live instance).
    pub fn accepts(self, state: InstanceState) -> bool {
        self.accepted_states().is_none_or(|s| s.contains(&state))
    }

    /// The lifecycle gate: `Ok` when the operation accepts `state`, otherwise
    /// the typed `SandboxLifecycleConflict`.
    pub fn check_state(self, state: InstanceState) -> Result<(), SandboxError> {
        match self.accepted_states() {
            Some(accepted) if !accepted.contains(&state) => Err(SandboxError::lifecycle_conflict(
                self,
                accepted,
                ConflictState::from(state),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_accepted_states() {
        use InstanceState::*;
        assert!(Operation::WriteFile.accepts(Provisioning));
        assert!(Operation::WriteFile.accepts(Active));
        assert!(Operation::Activate.accepts(Provisioning));
        assert!(!Operation::Activate.accepts(Active));
        for op in [
            Operation::Execute,
            Operation::ReadFile,
            Operation::ListDir,
            Operation::Snapshot,
            Operation::Release,
            Operation::OpenProcess,
            Operation::BeginActiveWrite,
        ] {
            assert!(op.accepts(Active), "{op}");
            assert!(!op.accepts(Provisioning), "{op}");
        }
        let err = Operation::Execute.check_state(Provisioning).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SandboxLifecycleConflict: operation execute: expected [active], actual provisioning"
        );
    }
}
