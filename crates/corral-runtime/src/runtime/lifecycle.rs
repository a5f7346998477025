//! The lifecycle gate.
//!
//! "An instance has exactly two states: `provisioning` and `active`. Every
//! operation names the states it accepts, and the Runner refuses a mismatch
//! as `SandboxLifecycleConflict{operation, expected, actual}` **before
//! calling you**."
//!
//! The gate runs before every call that addresses an instance, from what the
//! runtime tracked ([`super::tracked`]): a live instance in a state the
//! operation does not accept is a conflict naming that state; an instance
//! the runtime released or destroyed is a conflict naming `released` or
//! `destroyed`; an instance the runtime never saw is
//! `SandboxInstanceNotFound` — the provider is not asked in any of these
//! cases.

use corral_contract::{InstanceId, InstanceState, Operation, SandboxError};

use std::sync::Arc;

use super::tracked::{Instances, Lookup, Tracked};

/// Admits `operation` on `instance_id`, returning the tracked record.
///
/// `operation` must be one that addresses a live instance
/// ([`Operation::accepted_states`] is `Some`); for any other the gate admits
/// a live instance in any state.
pub(crate) fn gate(
    instances: &Instances,
    operation: Operation,
    instance_id: &InstanceId,
) -> Result<Arc<Tracked>, SandboxError> {
    let accepted = operation
        .accepted_states()
        .unwrap_or(&[InstanceState::Provisioning, InstanceState::Active]);
    match instances.lookup(instance_id) {
        Lookup::Live(tracked) => {
            operation.check_state(tracked.instance.state)?;
            Ok(tracked)
        }
        Lookup::Ended(how) => Err(SandboxError::lifecycle_conflict(
            operation,
            accepted,
            how.conflict_state(),
        )),
        Lookup::Unknown => Err(SandboxError::SandboxInstanceNotFound {
            instance_id: instance_id.clone(),
        }),
    }
}
