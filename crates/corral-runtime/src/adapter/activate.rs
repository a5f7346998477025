//! `activate`: seal the staged mounts and make the instance runnable.
//!
//! There is no backend primitive that seals a directory against the
//! workload. Sealing is therefore what the adapter can do honestly: the
//! record becomes `active` and `sealed`, after which the trusted port
//! refuses every write into a mount (`writeFile` narrows to the output tree;
//! `beginActiveWrite` refuses `read_only` mounts). The workload itself is not
//! stopped from writing a `read_only` mount, which is why no envelope behind
//! this adapter may claim `read_only_mounts: provider_enforced` (refused by
//! [`super::ContractAdapter::new`]).
//!
//! The rollback moves exactly this instance's record back to `provisioning`,
//! unsealed — the one thing activation changed.

use corral_backend::Backend;
use corral_contract::{
    Handoff, InstanceId, InstanceState, Operation, SandboxError, SandboxInstance,
};

use super::ContractAdapter;
use super::rollback::Deactivate;

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    instance_id: InstanceId,
) -> Result<Handoff<SandboxInstance>, SandboxError> {
    let op = Operation::Activate;
    let located = adapter.locate(op, &instance_id).await?;
    op.check_state(located.record.state)?;
    let mut record = located.record;
    record.state = InstanceState::Active;
    record.sealed = true;
    adapter
        .save_record(op, &located.sandbox_id, &record)
        .await?;
    Ok(Handoff::new(
        adapter.instance_of(&record),
        Deactivate {
            backend: adapter.backend.clone(),
            sandbox_id: located.sandbox_id,
            instance_id,
        },
    ))
}
