//! `zdr-release`: "ZDR snapshots are forbidden and release destroys all
//! state".
//!
//! An `ephemeral_zdr` instance with data in it (uploaded and written by the
//! workload) is refused a snapshot with `SandboxSnapshotForbidden` naming
//! the instance and its retention. Its release answers `destroyed` — never
//! `released` — and afterwards the instance is gone: `execute` and
//! `writeFile` are refused and (where the target can observe its backend)
//! nothing it allocated remains, neither a sandbox nor a snapshot; only then
//! is `destroy` called, and it settles idempotently.

use corral_contract::{ErrorKind, ReleaseDisposition, RetentionMode, SandboxError, SandboxPath};

use crate::failure::{Failure, ensure, expect_refusal, expect_refused};
use crate::request::{Plan, SNAPSHOT_RETENTION, internal, later, now};
use crate::scope::contract::{ContractScope, already_gone};
use crate::target::ConformanceTarget;
use corral_contract::SandboxProvider;

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let before = s.inventory().await?;
    let outputs = SandboxPath::output_path();
    let id = s
        .active(Plan::new(RetentionMode::EphemeralZdr))
        .await?
        .instance_id;
    let trace = outputs.join("trace.txt").map_err(internal)?;
    s.write(&id, &trace, b"data that must not be retained\n")
        .await?;
    s.run_ok(
        &id,
        Some(&outputs),
        "printf 'workload data\\n' > workload.txt",
    )
    .await?;
    let during = s.inventory().await?;

    let refused = expect_refusal(
        "snapshot of an ephemeral_zdr instance",
        s.try_snapshot(&id, later(now()?, SNAPSHOT_RETENTION)?)
            .await?,
        ErrorKind::SandboxSnapshotForbidden,
    )?;
    if let SandboxError::SandboxSnapshotForbidden {
        instance_id,
        retention,
    } = &refused
    {
        ensure(
            *instance_id == id && *retention == RetentionMode::EphemeralZdr,
            || {
                format!(
                    "snapshot refusal names {instance_id} with retention {retention}, expected {id} with ephemeral_zdr"
                )
            },
        )?;
    }
    s.expect_file(&id, &trace, b"data that must not be retained\n")
        .await?;

    let disposition = s.release(&id, None).await?;
    ensure(disposition == ReleaseDisposition::Destroyed, || {
        "release of an ephemeral_zdr instance answered released, expected destroyed".into()
    })?;
    expect_refused(
        "execute after the ZDR release",
        s.try_execute(&id, None, "true", 16).await?,
    )?;
    expect_refused(
        "writeFile into the output tree after the ZDR release",
        s.try_write(&id, &trace, b"again").await?,
    )?;
    if let (Some(before), Some(during)) = (before, during) {
        let allocated = during.added_since(&before);
        ensure(!allocated.sandboxes.is_empty(), || {
            "the backend's inventory shows no sandbox for the active instance, so it proves nothing"
                .into()
        })?;
        let after = s
            .inventory()
            .await?
            .ok_or_else(|| Failure::new("the backend's inventory became unavailable"))?;
        let left = after.added_since(&before);
        ensure(left.is_empty(), || {
            format!("the ZDR release left state in the backend: {left}")
        })?;
    }
    // Only now, so that a teardown cannot hide what the release left.
    if let Err(e) = s.rt()?.destroy(id.clone()).await
        && !already_gone(&e)
    {
        return Err(Failure::step(
            "destroy after the ZDR release (idempotent)",
            e,
        ));
    }
    s.forget(std::slice::from_ref(&id), &[]);
    Ok(())
}
