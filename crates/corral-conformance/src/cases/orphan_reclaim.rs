//! Orphan reclaim: "expired instances are reclaimed without a database
//! reset".
//!
//! Instance A is provisioned and activated; a cutoff is taken after its
//! creation; instance B is provisioned after the cutoff. The runtime is then
//! dropped and a fresh one built over a fresh provider of the same backend
//! state — nothing remembered in memory survives. `cleanup` with the cutoff
//! must reclaim A (and report it) and spare B; A is then gone — from the
//! backend's inventory where the target can observe it, through the fresh
//! runtime (`execute` is refused) and from a second sweep, which does not
//! report it again. A final sweep with a later cutoff reclaims B the same
//! way.
//!
//! The sweeps reclaim whatever the provider holds from before the cutoff:
//! run the suite against a provider dedicated to it.

use std::time::Duration;

use corral_contract::{CleanupResult, InstanceId, SandboxPath};

use crate::failure::{Failure, ensure, expect_refused};
use crate::request::{Plan, disposable_retention, internal, now};
use crate::scope::contract::ContractScope;
use crate::target::{ConformanceTarget, Inventory};

/// The pause on each side of the cutoff, so that creation instants compare
/// strictly at millisecond resolution.
const MARGIN: Duration = Duration::from_millis(25);

fn ids(result: &CleanupResult) -> String {
    let ids: Vec<&str> = result.instances.iter().map(|i| i.as_str()).collect();
    format!("[{}]", ids.join(", "))
}

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let retention = disposable_retention(s.envelope());
    let before = s.inventory().await?;
    let orphan = s.active(Plan::new(retention)).await?.instance_id;
    let trace = SandboxPath::output_path()
        .join("orphan.txt")
        .map_err(internal)?;
    s.write(&orphan, &trace, b"left behind by a runtime that died\n")
        .await?;
    let with_orphan = s.inventory().await?;
    tokio::time::sleep(MARGIN).await;
    let cutoff = now()?;
    tokio::time::sleep(MARGIN).await;
    let survivor = s.active(Plan::new(retention)).await?.instance_id;
    let with_both = s.inventory().await?;

    s.restart()?;
    let swept = s.cleanup(now()?, cutoff, Vec::new()).await?;
    ensure(swept.instances.contains(&orphan), || {
        format!(
            "cleanup before {cutoff} by a restarted runtime did not reclaim {orphan} (reclaimed {})",
            ids(&swept)
        )
    })?;
    ensure(!swept.instances.contains(&survivor), || {
        format!("cleanup before {cutoff} reclaimed {survivor}, created after the cutoff")
    })?;
    s.forget(std::slice::from_ref(&orphan), &[]);
    if let (Some(before), Some(with_orphan), Some(with_both)) = (&before, &with_orphan, &with_both)
    {
        let orphan_held = with_orphan.added_since(before);
        let survivor_held = with_both.added_since(with_orphan);
        gone_from_backend(s, &orphan, &orphan_held, &survivor_held).await?;
    }
    expect_refused(
        "execute on the reclaimed instance through the restarted runtime",
        s.try_execute(&orphan, None, "true", 16).await?,
    )?;
    let again = s.cleanup(now()?, cutoff, Vec::new()).await?;
    ensure(!again.instances.contains(&orphan), || {
        format!("a second sweep reclaimed {orphan} again: the first did not destroy it")
    })?;

    tokio::time::sleep(MARGIN).await;
    let last = now()?;
    let final_sweep = s.cleanup(last, last, Vec::new()).await?;
    ensure(final_sweep.instances.contains(&survivor), || {
        format!(
            "cleanup before {last} did not reclaim {survivor} (reclaimed {})",
            ids(&final_sweep)
        )
    })?;
    s.forget(std::slice::from_ref(&survivor), &[]);
    Ok(())
}

/// The backend no longer holds what the orphan allocated, and still holds
/// what the survivor allocated.
async fn gone_from_backend<T: ConformanceTarget>(
    s: &ContractScope<'_, T>,
    orphan: &InstanceId,
    orphan_held: &Inventory,
    survivor_held: &Inventory,
) -> Result<(), Failure> {
    ensure(!orphan_held.sandboxes.is_empty(), || {
        format!("the backend's inventory shows no sandbox for {orphan}, so it proves nothing")
    })?;
    let now_held = s
        .inventory()
        .await?
        .ok_or_else(|| Failure::new("the backend's inventory became unavailable"))?;
    let left: Vec<&String> = orphan_held
        .sandboxes
        .intersection(&now_held.sandboxes)
        .collect();
    ensure(left.is_empty(), || {
        format!("cleanup reported {orphan} reclaimed but the backend still holds sandbox {left:?}")
    })?;
    let spared = survivor_held.sandboxes.is_subset(&now_held.sandboxes);
    ensure(spared, || {
        format!(
            "the backend lost sandboxes {:?} of the instance created after the cutoff",
            survivor_held.sandboxes
        )
    })
}
