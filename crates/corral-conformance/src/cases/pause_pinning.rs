//! Pause pinning: "a pause-pinned snapshot survives orphan cleanup until
//! its **own** expiry".
//!
//! A durable instance is paused: checkpointed by a `release` whose snapshot
//! expires shortly ([`PIN_LIFETIME`]). An unpinned control snapshot with a
//! long retention is taken just before. A sweep with a cutoff after both
//! were created, pinning the pause snapshot, must reclaim the control (so
//! the sweep is shown to bite) and spare the pinned one, which still
//! resumes with the paused work in it. Once the pinned snapshot's own
//! `expires_at` has passed, the same sweep with the same pin reclaims it:
//! "retention expiry always wins over the pin".
//!
//! The sweeps reclaim whatever the provider holds from before the cutoff:
//! run the suite against a provider dedicated to it.

use std::time::Duration;

use corral_contract::{ErrorKind, ReleaseDisposition, RetentionMode, SandboxPath};

use crate::failure::{Failure, ensure, expect_refusal, expect_refused};
use crate::request::{Plan, SNAPSHOT_RETENTION, internal, later, now};
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// How long the pause snapshot is retained.
pub(crate) const PIN_LIFETIME: Duration = Duration::from_secs(2);

/// The pause after its expiry before the last sweep.
const MARGIN: Duration = Duration::from_millis(50);

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let outputs = SandboxPath::output_path();
    let work = outputs.join("work.txt").map_err(internal)?;
    let request = s.request(Plan::new(RetentionMode::Durable))?;
    let session = request.session_id.clone();
    let id = s.provision(request).await?.instance_id;
    s.activate(&id).await?;
    s.run_ok(&id, Some(&outputs), "printf 'paused work\\n' > work.txt")
        .await?;
    let control = s.snapshot(&id, later(now()?, SNAPSHOT_RETENTION)?).await?;
    let pin_expiry = later(now()?, PIN_LIFETIME)?;
    let pinned = match s.release(&id, Some(pin_expiry)).await? {
        ReleaseDisposition::Released { snapshot } => *snapshot,
        ReleaseDisposition::Destroyed => {
            return Err(Failure::new(
                "release of a durable instance answered destroyed, expected released",
            ));
        }
    };
    tokio::time::sleep(MARGIN).await;
    let cutoff = now()?;
    ensure(cutoff < pin_expiry, || {
        format!("the pause took longer than {PIN_LIFETIME:?}; the pin cannot be observed")
    })?;

    let first = s
        .cleanup(cutoff, cutoff, vec![pinned.snapshot_id.clone()])
        .await?;
    ensure(first.snapshots.contains(&control.snapshot_id), || {
        format!(
            "the unpinned control snapshot {}, created before the cutoff, survived the sweep, so the sweep proves nothing",
            control.snapshot_id
        )
    })?;
    s.forget(&[], std::slice::from_ref(&control.snapshot_id));
    ensure(!first.snapshots.contains(&pinned.snapshot_id), || {
        format!(
            "the pinned snapshot {} was swept before its own expiry {pin_expiry}",
            pinned.snapshot_id
        )
    })?;
    let request = s.request(Plan::new(RetentionMode::Durable).session(&session))?;
    expect_refusal(
        "resume from the swept control snapshot",
        s.try_resume(request, &control).await?,
        ErrorKind::SandboxSnapshotNotFound,
    )?;
    let request = s.request(Plan::new(RetentionMode::Durable).session(&session))?;
    let resumed = s.resume(request, &pinned).await?.instance_id;
    s.expect_file(&resumed, &work, b"paused work\n").await?;
    s.destroy(&resumed).await?;

    let wait = pin_expiry.millis_since(now()?).max(0).unsigned_abs();
    tokio::time::sleep(Duration::from_millis(wait) + MARGIN).await;
    let expired = now()?;
    let second = s
        .cleanup(expired, cutoff, vec![pinned.snapshot_id.clone()])
        .await?;
    ensure(second.snapshots.contains(&pinned.snapshot_id), || {
        format!(
            "the pinned snapshot {} outlived its own expires_at {pin_expiry} (sweep at {expired})",
            pinned.snapshot_id
        )
    })?;
    s.forget(&[], std::slice::from_ref(&pinned.snapshot_id));
    let request = s.request(Plan::new(RetentionMode::Durable).session(&session))?;
    expect_refused(
        "resume from the pinned snapshot after its expiry and the sweep",
        s.try_resume(request, &pinned).await?,
    )?;
    Ok(())
}
