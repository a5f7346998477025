//! `destroy`: idempotent teardown of one instance, in any state.
//!
//! The sandbox keyed by the instance id (and labelled as that instance) is
//! destroyed with everything in it — live processes included; the
//! instance's live-process reservation is dropped. An unknown instance, one
//! already destroyed or released, or a key that belongs to a sandbox that is
//! not a contract instance is `Ok`: delivery is at-least-once, and a second
//! call settles the same way as the first.

use corral_backend::{Backend, ErrorCode};
use corral_contract::{InstanceId, Operation, SandboxError};

use super::ContractAdapter;
use super::errors::{Subject, on};

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    instance_id: InstanceId,
) -> Result<(), SandboxError> {
    let op = Operation::Destroy;
    let found = adapter
        .find_sandbox(&instance_id)
        .await
        .map_err(on(op, Subject::Path))?;
    if let Some(info) = found {
        match adapter.backend.destroy(&info.id).await {
            Ok(()) => {}
            Err(e) if e.code() == ErrorCode::NotFound => {}
            Err(e) => return Err(on(op, Subject::Path)(e)),
        }
    }
    adapter.processes.forget(&instance_id);
    Ok(())
}
