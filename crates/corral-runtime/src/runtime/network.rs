//! The network policy check, at admission and again on `activate`,
//! `execute`, `resume` and `openProcess`.
//!
//! "`network_policy` … covers three distinct conditions: 1. you do not
//! support the requested mode; 2. your advertised egress grade does not meet
//! what the policy requires; 3. the retained profile's own network policy
//! does not satisfy the *current* policy shape at all, which the runtime
//! re-checks on `activate`, `execute`, `resume`, and `openProcess`, not only
//! at selection."
//!
//! The current policy shape is the runtime's [`NetworkShape`]: the modes a
//! profile may use now and the egress grade an allowlist needs now. It can be
//! tightened while instances live ([`super::Runtime::set_network_shape`]);
//! an instance admitted under the old shape is then refused at its next
//! re-checked call. Every refusal is `SandboxCapabilityUnavailable
//! {network_policy}`; its `capability` names the envelope field that falls
//! short (`network_modes` or `egress_certification`), and is absent when the
//! profile's own policy is what the current shape refuses.

use corral_contract::{
    CapabilityField, EgressCertification, NetworkMode, NetworkPolicy, Requirement, SandboxError,
    SandboxProviderCapabilities,
};

use crate::select::{NetworkShortfall, network_unmet};

/// The network policy shape currently in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkShape {
    /// The modes a profile may use.
    pub modes: Vec<NetworkMode>,
    /// The egress grade an allowlist needs (never below `advisory_filter`).
    pub minimum_egress: EgressCertification,
}

impl Default for NetworkShape {
    /// Both modes, and an allowlist graded at least `advisory_filter`.
    fn default() -> Self {
        Self {
            modes: vec![NetworkMode::None, NetworkMode::Allowlist],
            minimum_egress: EgressCertification::AdvisoryFilter,
        }
    }
}

fn refused(capability: Option<CapabilityField>) -> SandboxError {
    SandboxError::SandboxCapabilityUnavailable {
        requirement: Requirement::NetworkPolicy,
        capability,
    }
}

/// The policy decoded again from its wire form: a retained policy that no
/// longer decodes under the current rules does not have the current shape.
fn redecoded(policy: &NetworkPolicy) -> Option<NetworkPolicy> {
    let wire = serde_json::to_value(policy).ok()?;
    serde_json::from_value(wire).ok()
}

/// Checks `policy` against the current `shape` and the provider's envelope.
pub(crate) fn check(
    policy: &NetworkPolicy,
    shape: &NetworkShape,
    capabilities: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    let current = match redecoded(policy) {
        Some(current) if current == *policy => current,
        _ => return Err(refused(None)),
    };
    if !shape.modes.contains(&current.mode()) {
        return Err(refused(None));
    }
    match network_unmet(&current, shape.minimum_egress, capabilities) {
        None => Ok(()),
        Some(NetworkShortfall::Mode) => Err(refused(Some(CapabilityField::NetworkModes))),
        Some(NetworkShortfall::EgressGrade) => {
            Err(refused(Some(CapabilityField::EgressCertification)))
        }
    }
}
