//! Provider selection: hold a profile's requirements against each candidate
//! envelope and pick exactly one.
//!
//! "`SandboxCapabilityUnavailable.requirement` is itself a closed set, and it
//! is the vocabulary selection speaks: `tier`, `platform`, `base_image`,
//! `packages`, `network_policy`, `retention`, `snapshots`, `resources`,
//! `mounts`, `physically_contained_file_read`, `active_mount_write`."
//!
//! [`ProfileRequirements`] states what a Run needs, in that vocabulary;
//! [`ProfileRequirements::first_unmet`] holds it against one envelope and
//! names the first need (in the vocabulary's order) the envelope does not
//! meet; [`select`] resolves a candidate list to exactly one provider, or
//! fails with `SandboxAdapterUnavailable` (nothing fits) or
//! `SandboxAdapterAmbiguous` (several fit).
//!
//! A requirement the profile does not state is not demanded: the default
//! requirements ask nothing of tier, platform, image mode, snapshots, or the
//! optional read and write capabilities, so that they are only as strict as
//! the caller makes them. Claims the envelope makes are taken at their
//! weakest reading: a resource ceiling needs its enforcement axis
//! `provider_enforced`, and an allowlist needs an egress grade of at least
//! `advisory_filter`.

use corral_contract::{
    AdapterRejection, EgressCertification, EnforcementAxis, EnforcementLevel, ImageMode, Mounts,
    NetworkPolicy, PackageManager, Platform, ProviderId, Requirement, ResourceLimits,
    RetentionMode, SandboxError, SandboxProfile, SandboxProviderCapabilities,
    SandboxProvisionRequest, Tier, check_mount_plan,
};

/// What a Run needs from a provider, in the contract's requirement
/// vocabulary. Derive it from a profile ([`ProfileRequirements::from_profile`])
/// or a provision request ([`ProfileRequirements::for_request`]) and tighten
/// the fields the profile does not carry (tier, image mode, optional
/// capabilities) as the Run demands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRequirements {
    /// `tier`: the weakest isolation tier acceptable; some advertised tier
    /// must be at least this strong (`Tier` is ordered weakest first).
    /// `None` accepts any tier.
    pub minimum_tier: Option<Tier>,
    /// `platform`: the platform the Run needs; `None` accepts any.
    pub platform: Option<Platform>,
    /// `base_image`: `profile` when the profile's derived image must be
    /// materialized; `host` when running on the provider's own root
    /// filesystem is acceptable (any provider then qualifies).
    pub base_image: ImageMode,
    /// `packages`: the package managers the profile's packages need.
    pub package_managers: Vec<PackageManager>,
    /// `network_policy`: the profile's policy.
    pub network: NetworkPolicy,
    /// `network_policy`: the egress grade an allowlist needs (raised to at
    /// least `advisory_filter`: an `unsupported` grade never serves an
    /// allowlist).
    pub minimum_egress: EgressCertification,
    /// `retention`: the profile's retention mode.
    pub retention: RetentionMode,
    /// `snapshots`: the Run captures Checkpoints.
    pub snapshots: bool,
    /// `snapshots` (capability `snapshot_clone`): the Run forks from a
    /// Checkpoint.
    pub snapshot_clone: bool,
    /// `resources`: the profile's ceilings; each one set needs its
    /// enforcement axis `provider_enforced`.
    pub resources: ResourceLimits,
    /// `mounts`: the mount plan (reserved roots, conflicts, `max_mounts`).
    pub mounts: Mounts,
    /// `physically_contained_file_read`: the Run reads files out.
    pub physically_contained_file_read: bool,
    /// `active_mount_write`: the Run publishes into a mount while active.
    pub active_mount_write: bool,
}

impl ProfileRequirements {
    /// The requirements a profile states: its retention (and, for
    /// `durable`, snapshots), its network policy, its packages' managers,
    /// its resource ceilings. No mounts, and nothing the profile does not
    /// carry.
    pub fn from_profile(profile: &SandboxProfile) -> Self {
        let mut package_managers: Vec<PackageManager> = Vec::new();
        for package in &profile.packages {
            if !package_managers.contains(&package.manager) {
                package_managers.push(package.manager);
            }
        }
        Self {
            minimum_tier: None,
            platform: None,
            base_image: ImageMode::Host,
            package_managers,
            network: profile.network.clone(),
            minimum_egress: EgressCertification::AdvisoryFilter,
            retention: profile.retention,
            snapshots: profile.retention == RetentionMode::Durable,
            snapshot_clone: false,
            resources: profile.resources,
            mounts: Mounts::none(),
            physically_contained_file_read: false,
            active_mount_write: false,
        }
    }

    /// The requirements a provision request states: its profile's, plus its
    /// platform and its mount plan.
    pub fn for_request(request: &SandboxProvisionRequest) -> Self {
        Self {
            platform: Some(request.platform),
            mounts: request.mounts.clone(),
            ..Self::from_profile(&request.profile)
        }
    }

    /// The first requirement `capabilities` does not meet, in the
    /// vocabulary's order (`tier`, `platform`, `base_image`, `packages`,
    /// `network_policy`, `retention`, `snapshots`, `resources`, `mounts`,
    /// `physically_contained_file_read`, `active_mount_write`); `None` when
    /// the envelope meets them all.
    pub fn first_unmet(&self, capabilities: &SandboxProviderCapabilities) -> Option<Requirement> {
        let checks: [(Requirement, Check); 11] = [
            (Requirement::Tier, Self::tier_met),
            (Requirement::Platform, Self::platform_met),
            (Requirement::BaseImage, Self::base_image_met),
            (Requirement::Packages, Self::packages_met),
            (Requirement::NetworkPolicy, Self::network_met),
            (Requirement::Retention, Self::retention_met),
            (Requirement::Snapshots, Self::snapshots_met),
            (Requirement::Resources, Self::resources_met),
            (Requirement::Mounts, Self::mounts_met),
            (
                Requirement::PhysicallyContainedFileRead,
                Self::contained_read_met,
            ),
            (Requirement::ActiveMountWrite, Self::active_write_met),
        ];
        checks
            .into_iter()
            .find(|(_, met)| !met(self, capabilities))
            .map(|(requirement, _)| requirement)
    }

    fn tier_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        self.minimum_tier
            .is_none_or(|minimum| caps.tiers.iter().any(|tier| *tier >= minimum))
    }

    fn platform_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        self.platform
            .is_none_or(|platform| caps.platforms.contains(&platform))
    }

    fn base_image_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        match self.base_image {
            ImageMode::Host => true,
            ImageMode::Profile => caps.image_mode == ImageMode::Profile,
        }
    }

    fn packages_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        self.package_managers
            .iter()
            .all(|manager| caps.package_managers.contains(manager))
    }

    fn network_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        network_unmet(&self.network, self.minimum_egress, caps).is_none()
    }

    fn retention_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        caps.retention_modes.contains(&self.retention)
    }

    fn snapshots_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        (!self.snapshots || caps.snapshots) && (!self.snapshot_clone || caps.snapshot_clone)
    }

    fn resources_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        let enforced = |axis| caps.enforcement.level(axis) == EnforcementLevel::ProviderEnforced;
        let r = &self.resources;
        (r.cpu_millicores.is_none() || enforced(EnforcementAxis::CpuLimit))
            && (r.memory_bytes.is_none() || enforced(EnforcementAxis::MemoryLimit))
            && (r.max_processes.is_none() || enforced(EnforcementAxis::ProcessCountLimit))
            // The envelope has no disk axis: no provider can claim a disk
            // ceiling, so one is never met (absent is a refusal, not a pass).
            && r.disk_bytes.is_none()
    }

    fn mounts_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        check_mount_plan(&self.mounts, caps).is_ok()
    }

    fn contained_read_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        !self.physically_contained_file_read || caps.physically_contained_file_read
    }

    fn active_write_met(&self, caps: &SandboxProviderCapabilities) -> bool {
        !self.active_mount_write || caps.active_mount_write
    }
}

/// One requirement held against one envelope.
type Check = fn(&ProfileRequirements, &SandboxProviderCapabilities) -> bool;

/// Why an envelope cannot serve a network policy, named by the envelope
/// field that falls short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkShortfall {
    /// The policy's mode is not in `network_modes`.
    Mode,
    /// The policy is an allowlist and `egress_certification` does not meet
    /// the required grade.
    EgressGrade,
}

/// Whether `capabilities` can serve `policy` with an allowlist grade of at
/// least `minimum_egress` (never below `advisory_filter`); `None` when it
/// can.
pub fn network_unmet(
    policy: &NetworkPolicy,
    minimum_egress: EgressCertification,
    capabilities: &SandboxProviderCapabilities,
) -> Option<NetworkShortfall> {
    if !capabilities.network_modes.contains(&policy.mode()) {
        return Some(NetworkShortfall::Mode);
    }
    let required = minimum_egress.max(EgressCertification::AdvisoryFilter);
    match policy {
        NetworkPolicy::None => None,
        NetworkPolicy::Allowlist { .. } if capabilities.egress_certification.meets(required) => {
            None
        }
        NetworkPolicy::Allowlist { .. } => Some(NetworkShortfall::EgressGrade),
    }
}

/// The name `select` gives an unnamed candidate in its errors: its
/// advertised `provider_revision` (the one identifying field an envelope
/// carries).
fn candidate_name(capabilities: &SandboxProviderCapabilities) -> ProviderId {
    ProviderId::new(capabilities.provider_revision.as_str())
        .unwrap_or_else(|_| unreachable!("a Revision satisfies the identifier rule of ProviderId"))
}

/// Selects the one provider whose envelope meets `requirements`, returning
/// its index in `candidates`.
///
/// - exactly one candidate fits: its index;
/// - none fits: `SandboxAdapterUnavailable` listing every candidate with
///   the first requirement it does not meet (empty when there are no
///   candidates) — with one candidate, that is the closed requirement of
///   its first unmet need;
/// - several fit: `SandboxAdapterAmbiguous` naming them.
///
/// Candidates are named in errors by their `provider_revision`; use
/// [`select_named`] to name them by provider id.
pub fn select(
    requirements: &ProfileRequirements,
    candidates: &[SandboxProviderCapabilities],
) -> Result<usize, SandboxError> {
    let named: Vec<(ProviderId, &SandboxProviderCapabilities)> = candidates
        .iter()
        .map(|caps| (candidate_name(caps), caps))
        .collect();
    resolve(requirements, &named)
}

/// [`select`] over candidates that carry their provider id.
pub fn select_named(
    requirements: &ProfileRequirements,
    candidates: &[(ProviderId, SandboxProviderCapabilities)],
) -> Result<usize, SandboxError> {
    let named: Vec<(ProviderId, &SandboxProviderCapabilities)> = candidates
        .iter()
        .map(|(id, caps)| (id.clone(), caps))
        .collect();
    resolve(requirements, &named)
}

fn resolve(
    requirements: &ProfileRequirements,
    candidates: &[(ProviderId, &SandboxProviderCapabilities)],
) -> Result<usize, SandboxError> {
    let mut fitting = Vec::new();
    let mut rejected = Vec::new();
    for (index, (provider, caps)) in candidates.iter().enumerate() {
        match requirements.first_unmet(caps) {
            None => fitting.push(index),
            Some(requirement) => rejected.push(AdapterRejection {
                provider: provider.clone(),
                requirement,
            }),
        }
    }
    match fitting.as_slice() {
        [one] => Ok(*one),
        [] => Err(SandboxError::SandboxAdapterUnavailable { rejected }),
        several => Err(SandboxError::SandboxAdapterAmbiguous {
            candidates: several
                .iter()
                .map(|index| candidates[*index].0.clone())
                .collect(),
        }),
    }
}
