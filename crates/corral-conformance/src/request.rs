//! The requests the cases send: identities, profiles, mounts, deadlines.
//!
//! Every request is built from the target's own envelope (its placement and
//! first platform) so that it is admissible wherever the case's tokens say
//! it should be; what a case varies is its [`Plan`].

use std::time::{Duration, SystemTime};

use corral_contract::{
    AttemptId, ConformanceCase, Digest, DurationSeconds, HostPort, InvalidValue, LeaseEpoch,
    LeaseId, MountAccess, MountSpec, Mounts, NetworkMode, NetworkPolicy, ProfileId, ProfileVersion,
    ProviderId, ResourceLimits, RetentionMode, RunId, SandboxPath, SandboxProfile,
    SandboxProviderCapabilities, SandboxProvisionRequest, SessionId, TargetId, Timestamp,
    WorkspaceId,
};
use sha2::{Digest as _, Sha256};

use crate::failure::Failure;
use crate::target::EgressFixture;

/// How long every instance the cases provision may live.
pub(crate) const INSTANCE_LIFETIME: Duration = Duration::from_secs(3600);

/// The retention deadline of snapshots that must outlive the case.
pub(crate) const SNAPSHOT_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// The allowlist destination of profiles on a target without `none`, when
/// the target has no egress fixture.
const FALLBACK_DESTINATION: &str = "example.com:443";

/// What a case varies in a provision request.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The profile's retention.
    pub(crate) retention: RetentionMode,
    /// The profile's network policy; `None` takes the target's default
    /// ([`default_network`]).
    pub(crate) network: Option<NetworkPolicy>,
    /// The declared mounts.
    pub(crate) mounts: Vec<MountSpec>,
    /// The Session; `None` opens a new one.
    pub(crate) session: Option<SessionId>,
}

impl Plan {
    /// A plan with no mounts, the default network and a new Session.
    pub(crate) fn new(retention: RetentionMode) -> Self {
        Self {
            retention,
            network: None,
            mounts: Vec::new(),
            session: None,
        }
    }

    /// Declares a mount.
    pub(crate) fn mount(mut self, path: &SandboxPath, access: MountAccess) -> Self {
        self.mounts.push(MountSpec {
            path: path.clone(),
            access,
        });
        self
    }

    /// Uses `network` as the profile's policy.
    pub(crate) fn network(mut self, network: NetworkPolicy) -> Self {
        self.network = Some(network);
        self
    }

    /// Provisions into `session`.
    pub(crate) fn session(mut self, session: &SessionId) -> Self {
        self.session = Some(session.clone());
        self
    }
}

/// A refusal of one of the suite's own values: a defect of the suite.
pub(crate) fn internal(e: InvalidValue) -> Failure {
    Failure::step("building a request (a defect of the suite)", e)
}

/// A path from a literal.
pub(crate) fn path(text: &str) -> Result<SandboxPath, Failure> {
    SandboxPath::new(text).map_err(internal)
}

/// The current instant.
pub(crate) fn now() -> Result<Timestamp, Failure> {
    Timestamp::from_system_time(SystemTime::now()).map_err(internal)
}

/// `t` plus `d`.
pub(crate) fn later(t: Timestamp, d: Duration) -> Result<Timestamp, Failure> {
    let millis = i64::try_from(d.as_millis()).map_err(|_| Failure::new("a duration overflows"))?;
    t.checked_add_millis(millis)
        .ok_or_else(|| Failure::new(format_args!("{t} plus {d:?} is past the timestamp range")))
}

/// The policy of profiles that do not test egress: `none` where the target
/// enforces it, else an allowlist of one destination.
pub(crate) fn default_network(
    envelope: &SandboxProviderCapabilities,
    egress: Option<&EgressFixture>,
) -> Result<NetworkPolicy, Failure> {
    if envelope.network_modes.contains(&NetworkMode::None) {
        return Ok(NetworkPolicy::None);
    }
    let destination = match egress {
        Some(fixture) => fixture.allowed.clone(),
        None => HostPort::new(FALLBACK_DESTINATION).map_err(internal)?,
    };
    allowlist(vec![destination])
}

/// An allowlist policy.
pub(crate) fn allowlist(destinations: Vec<HostPort>) -> Result<NetworkPolicy, Failure> {
    Ok(NetworkPolicy::Allowlist {
        destinations: corral_contract::Destinations::new(destinations).map_err(internal)?,
    })
}

/// The retention of cases that need no snapshot: `ephemeral_zdr` where the
/// target offers it, else `durable`.
pub(crate) fn disposable_retention(envelope: &SandboxProviderCapabilities) -> RetentionMode {
    if envelope
        .retention_modes
        .contains(&RetentionMode::EphemeralZdr)
    {
        RetentionMode::EphemeralZdr
    } else {
        RetentionMode::Durable
    }
}

/// Everything a request needs besides the plan.
pub(crate) struct Context<'a> {
    /// The target's name (the request's `provider`).
    pub(crate) provider: &'a str,
    /// The case (names the profile and the Sessions).
    pub(crate) case: ConformanceCase,
    /// The envelope (placement, platform).
    pub(crate) envelope: &'a SandboxProviderCapabilities,
    /// The root image.
    pub(crate) root_image: corral_contract::ImageReference,
    /// The network policy when the plan names none.
    pub(crate) default_network: NetworkPolicy,
    /// A number unique within the case (Sessions, Runs, leases).
    pub(crate) sequence: u32,
}

/// The profile of a case: its digest is the SHA-256 of its id and
/// retention, so two profiles of one case differ exactly when their
/// retention does.
fn profile(
    case: ConformanceCase,
    retention: RetentionMode,
    network: NetworkPolicy,
) -> Result<SandboxProfile, Failure> {
    let id = format!("conformance-{case}");
    let digest = Sha256::digest(format!("corral profile {id} {retention}").as_bytes());
    Ok(SandboxProfile {
        id: ProfileId::new(id).map_err(internal)?,
        version: ProfileVersion::new("1").map_err(internal)?,
        digest: Digest::from_sha256_bytes(digest.into()),
        retention,
        network,
        max_duration_seconds: DurationSeconds::new(600).map_err(internal)?,
        packages: Vec::new(),
        resources: ResourceLimits::default(),
    })
}

/// The provision request of `plan`.
pub(crate) fn provision_request(
    cx: Context<'_>,
    plan: Plan,
) -> Result<SandboxProvisionRequest, Failure> {
    let n = cx.sequence;
    let case = cx.case;
    let session = match plan.session {
        Some(s) => s,
        None => SessionId::new(format!("{case}-session-{n}")).map_err(internal)?,
    };
    let platform = *cx
        .envelope
        .platforms
        .first()
        .ok_or_else(|| Failure::new("the envelope lists no platform"))?;
    let network = plan.network.unwrap_or(cx.default_network);
    Ok(SandboxProvisionRequest {
        provider: ProviderId::new(cx.provider).map_err(internal)?,
        placement: cx.envelope.placement,
        workspace_id: WorkspaceId::new("conformance").map_err(internal)?,
        session_id: session,
        run_id: RunId::new(format!("{case}-run-{n}")).map_err(internal)?,
        attempt_id: AttemptId::new("1").map_err(internal)?,
        lease_id: LeaseId::new(format!("{case}-lease-{n}")).map_err(internal)?,
        lease_epoch: LeaseEpoch::new(1).map_err(internal)?,
        target: TargetId::new("conformance").map_err(internal)?,
        profile: profile(case, plan.retention, network)?,
        platform,
        root_image: cx.root_image,
        mounts: Mounts::new(plan.mounts).map_err(internal)?,
        expires_at: later(now()?, INSTANCE_LIFETIME)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::synthetic_root_image;

    #[test]
    fn requests_follow_the_envelope_and_the_plan() {
        let envelope = SandboxProviderCapabilities::minimum();
        let cx = Context {
            provider: "example",
            case: ConformanceCase::ZdrRelease,
            envelope: &envelope,
            root_image: synthetic_root_image(),
            default_network: default_network(&envelope, None).unwrap(),
            sequence: 3,
        };
        let req = provision_request(cx, Plan::new(RetentionMode::EphemeralZdr)).unwrap();
        assert_eq!(req.placement, envelope.placement);
        assert_eq!(req.platform, envelope.platforms[0]);
        assert_eq!(req.profile.network, NetworkPolicy::None);
        assert_eq!(req.profile.retention, RetentionMode::EphemeralZdr);
        assert_eq!(req.session_id.as_str(), "zdr-release-session-3");
        assert_eq!(req.provider.as_str(), "example");
        assert!(req.mounts.as_slice().is_empty());
        assert!(req.expires_at > now().unwrap());
    }

    #[test]
    fn without_none_the_default_is_an_allowlist() {
        let mut d = SandboxProviderCapabilities::minimum().into_declaration();
        d.network_modes = vec![NetworkMode::Allowlist];
        let envelope = SandboxProviderCapabilities::new(d).unwrap();
        let policy = default_network(&envelope, None).unwrap();
        assert_eq!(policy.mode(), NetworkMode::Allowlist);
        assert_eq!(disposable_retention(&envelope), RetentionMode::EphemeralZdr);
    }

    #[test]
    fn profiles_differ_by_retention() {
        let a = profile(
            ConformanceCase::PausePinning,
            RetentionMode::Durable,
            NetworkPolicy::None,
        );
        let b = profile(
            ConformanceCase::PausePinning,
            RetentionMode::EphemeralZdr,
            NetworkPolicy::None,
        );
        assert_ne!(a.unwrap().digest, b.unwrap().digest);
    }
}
