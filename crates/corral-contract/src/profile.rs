//! The profile a request carries: identity, retention, network, limits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::MAX_SAFE_INTEGER;
use crate::capabilities::{PackageManager, RetentionMode};
use crate::macros::bounded_integer;
use crate::{
    Digest, DurationSeconds, NetworkPolicy, PackageName, PackageVersion, ProfileId, ProfileVersion,
};

/// The profile an instance is provisioned for. Compared as a whole by the
/// identity cross-check (`profile`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxProfile {
    /// The profile's identifier.
    pub id: ProfileId,
    /// The profile's version.
    pub version: ProfileVersion,
    /// The profile's derived image digest (root image plus packages); an
    /// instance's `materialization.profile_digest` must equal it.
    pub digest: Digest,
    /// The retention mode.
    pub retention: RetentionMode,
    /// The network policy.
    pub network: NetworkPolicy,
    /// The longest `execute.timeout_seconds` the Runner admits.
    pub max_duration_seconds: DurationSeconds,
    /// Packages to install on top of the root image (empty by default).
    #[serde(default)]
    pub packages: Vec<PackageSpec>,
    /// Resource ceilings (none by default).
    #[serde(default)]
    pub resources: ResourceLimits,
}

/// One package a profile installs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageSpec {
    /// The package manager that installs it.
    pub manager: PackageManager,
    /// The package name.
    pub name: PackageName,
    /// A version constraint, verbatim for the package manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<PackageVersion>,
}

bounded_integer!(
    /// A CPU ceiling in thousandths of a CPU: 1 to 1,000,000 (1,000 CPUs).
    CpuMillicores,
    field = "cpu_millicores",
    min = 1,
    max = 1_000_000
);

bounded_integer!(
    /// A memory ceiling in bytes: 1 to 2^53 − 1.
    MemoryBytes,
    field = "memory_bytes",
    min = 1,
    max = MAX_SAFE_INTEGER
);

bounded_integer!(
    /// A ceiling on live processes: 1 to 4,194,304 (Linux `pid_max` limit).
    ProcessCount,
    field = "max_processes",
    min = 1,
    max = 4_194_304
);

bounded_integer!(
    /// A disk ceiling in bytes: 1 to 2^53 − 1.
    DiskBytes,
    field = "disk_bytes",
    min = 1,
    max = MAX_SAFE_INTEGER
);

/// Resource ceilings a profile asks for; an absent ceiling is "the provider's
/// default". A provider that cannot honour one refuses selection with
/// `SandboxCapabilityUnavailable{resources}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceLimits {
    /// CPU ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_millicores: Option<CpuMillicores>,
    /// Memory ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<MemoryBytes>,
    /// Process-count ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<ProcessCount>,
    /// Disk ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<DiskBytes>,
}

impl ResourceLimits {
    /// Whether no ceiling is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
