//! `checkpoint-clone`: "a clone lands in an independent target-Session
//! snapshot".
//!
//! A durable instance is checkpointed, changed afterwards, and the
//! checkpoint cloned into a new Session. The clone must have a **different**
//! `snapshot_id`, be bound to the target Session, keep the source's
//! `expires_at` byte-identical and have `created_at` in `[source's, own
//! expiry)`. It must not depend on the source: after `destroySnapshot` of
//! the source (which is then really gone) and `destroy` of the source
//! instance, the clone still resumes — into the target Session only — and
//! holds the state of the checkpoint, not the later change.

use corral_contract::{ErrorKind, InstanceState, RetentionMode, SandboxPath};

use crate::failure::{Failure, ensure, expect_refusal, expect_refused};
use crate::request::{Plan, SNAPSHOT_RETENTION, internal, later, now};
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let outputs = SandboxPath::output_path();
    let marker = outputs.join("checkpoint.txt").map_err(internal)?;
    let made = outputs.join("workload.txt").map_err(internal)?;
    let source_instance = s.active(Plan::new(RetentionMode::Durable)).await?;
    let id = source_instance.instance_id.clone();
    s.write(&id, &marker, b"state at the checkpoint\n").await?;
    s.run_ok(
        &id,
        Some(&outputs),
        "printf 'made by the workload\\n' > workload.txt",
    )
    .await?;
    let source = s.snapshot(&id, later(now()?, SNAPSHOT_RETENTION)?).await?;
    s.write(&id, &marker, b"changed after the checkpoint\n")
        .await?;

    let target_session = s.new_session()?;
    let clone = s.clone_snapshot(&source, &target_session).await?;
    ensure(clone.snapshot_id != source.snapshot_id, || {
        format!(
            "the clone reuses the source's snapshot_id {}",
            source.snapshot_id
        )
    })?;
    ensure(clone.session_id == target_session, || {
        format!(
            "the clone is bound to Session {}, expected the target {target_session}",
            clone.session_id
        )
    })?;
    ensure(clone.expires_at == source.expires_at, || {
        format!(
            "the clone expires at {}, the source at {}",
            clone.expires_at, source.expires_at
        )
    })?;
    ensure(
        clone.created_at >= source.created_at && clone.created_at < clone.expires_at,
        || {
            format!(
                "the clone was created at {}, outside [{}, {})",
                clone.created_at, source.created_at, clone.expires_at
            )
        },
    )?;

    // Independence: the source goes away entirely.
    s.destroy_snapshot(&source.snapshot_id).await?;
    s.destroy(&id).await?;
    let source_session = Plan::new(RetentionMode::Durable).session(&source.session_id);
    let request = s.request(source_session.clone())?;
    expect_refusal(
        "resume from the destroyed source snapshot",
        s.try_resume(request, &source).await?,
        ErrorKind::SandboxSnapshotNotFound,
    )?;
    let request = s.request(source_session)?;
    expect_refused(
        "resume of the clone into the source's Session",
        s.try_resume(request, &clone).await?,
    )?;

    let request = s.request(Plan::new(RetentionMode::Durable).session(&target_session))?;
    let resumed = s.try_resume(request, &clone).await?.map_err(|e| {
        Failure::new(format_args!(
            "the clone {} does not resume once its source is gone: {e}",
            clone.snapshot_id
        ))
    })?;
    ensure(resumed.state == InstanceState::Active, || {
        format!(
            "the clone resumed in state {}, expected active",
            resumed.state
        )
    })?;
    ensure(resumed.session_id == target_session, || {
        format!(
            "the clone resumed into Session {}, expected {target_session}",
            resumed.session_id
        )
    })?;
    s.expect_file(&resumed.instance_id, &marker, b"state at the checkpoint\n")
        .await?;
    s.expect_file(&resumed.instance_id, &made, b"made by the workload\n")
        .await
}
