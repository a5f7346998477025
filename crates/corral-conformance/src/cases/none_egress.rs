//! `none` egress: "outbound traffic is denied for a `none`-network
//! profile".
//!
//! An instance of a `none` profile probes both fixture destinations — the
//! one an allowlist would admit and the one it would not — and must reach
//! neither. A probe that proves nothing (the tool is missing, a signal)
//! fails the case rather than passing it.

use corral_contract::NetworkPolicy;

use crate::failure::{Failure, ensure};
use crate::probe::Verdict;
use crate::request::{Plan, disposable_retention};
use crate::scope::contract::ContractScope;
use crate::target::{ConformanceTarget, NO_EGRESS_FIXTURE};

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let fixture = s.egress().ok_or_else(|| Failure::new(NO_EGRESS_FIXTURE))?;
    let plan = Plan::new(disposable_retention(s.envelope())).network(NetworkPolicy::None);
    let id = s.active(plan).await?.instance_id;
    for destination in [&fixture.allowed, &fixture.denied] {
        let verdict = s.probe(&id, fixture.probe, destination).await?;
        ensure(verdict == Verdict::Blocked, || {
            format!("reached {destination} from an instance whose network policy is none")
        })?;
    }
    Ok(())
}
