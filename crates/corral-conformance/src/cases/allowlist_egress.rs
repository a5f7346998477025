//! Allowlist egress: "only the declared outbound hosts are reachable".
//!
//! An instance of a profile whose allowlist declares exactly the fixture's
//! allowed destination must reach it (so the probe is shown to work), and
//! must reach neither the fixture's other destination nor the allowed host
//! on a port the allowlist does not declare: destinations are `host:port`
//! pairs, not hosts.

use corral_contract::HostPort;

use crate::failure::{Failure, ensure};
use crate::probe::Verdict;
use crate::request::{Plan, allowlist, disposable_retention, internal};
use crate::scope::contract::ContractScope;
use crate::target::{ConformanceTarget, NO_EGRESS_FIXTURE};

/// A port on the allowed host that the allowlist does not declare.
fn other_port(allowed: &HostPort) -> Result<HostPort, Failure> {
    let port = if allowed.port() == 8443 { 9443 } else { 8443 };
    HostPort::new(format!("{}:{port}", allowed.host())).map_err(internal)
}

pub(crate) async fn run<T: ConformanceTarget>(s: &mut ContractScope<'_, T>) -> Result<(), Failure> {
    let fixture = s
        .allowlist_egress()
        .ok_or_else(|| Failure::new(NO_EGRESS_FIXTURE))?;
    let policy = allowlist(vec![fixture.allowed.clone()])?;
    let plan = Plan::new(disposable_retention(s.envelope())).network(policy);
    let id = s.active(plan).await?.instance_id;
    let allowed = &fixture.allowed;
    let verdict = s.probe(&id, fixture.probe, allowed).await?;
    ensure(verdict == Verdict::Reached, || {
        format!("could not reach {allowed}, which the allowlist declares")
    })?;
    let undeclared_port = other_port(allowed)?;
    for destination in [&fixture.denied, &undeclared_port] {
        let verdict = s.probe(&id, fixture.probe, destination).await?;
        ensure(verdict == Verdict::Blocked, || {
            format!("reached {destination}, which the allowlist [{allowed}] does not declare")
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_port_differs() {
        let a = HostPort::new("api.example.com:443").unwrap();
        assert_eq!(other_port(&a).unwrap().to_string(), "api.example.com:8443");
        let b = HostPort::new("[::1]:8443").unwrap();
        assert_eq!(other_port(&b).unwrap().to_string(), "[::1]:9443");
    }
}
