//! The closed vocabularies a capability envelope speaks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::vocabulary;

vocabulary! {
    /// Where instances run relative to the party operating the Runner.
    pub enum Placement: "placement" {
        /// On a third party's platform, reached over its API (e.g. a hosted
        /// sandbox service).
        Hosted = "hosted",
        /// On infrastructure the operator runs, but not on the Runner's host.
        SelfHosted = "self_hosted",
        /// On the Runner's own host (namespaces, a local container engine, a
        /// host process, an in-memory simulation).
        Local = "local",
    }
}

vocabulary! {
    /// The isolation technology of an instance, weakest first.
    pub enum Tier: "tier" {
        /// No workload runs: an in-memory simulation (the deterministic oracle).
        Simulated = "simulated",
        /// A host process without an isolation boundary.
        Process = "process",
        /// Kernel namespaces and cgroups (a container), sharing the host kernel.
        Container = "container",
        /// A lightweight virtual machine with its own kernel.
        Microvm = "microvm",
        /// A full virtual machine.
        VirtualMachine = "virtual_machine",
    }
}

vocabulary! {
    /// The operating system an instance runs.
    pub enum OperatingSystem: "os" {
        /// Linux.
        Linux = "linux",
    }
}

vocabulary! {
    /// The CPU architecture an instance runs (OCI spelling).
    pub enum Architecture: "architecture" {
        /// x86-64.
        Amd64 = "amd64",
        /// AArch64.
        Arm64 = "arm64",
    }
}

/// One platform an instance can run on, `{os, architecture}`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// The operating system.
    pub os: OperatingSystem,
    /// The CPU architecture.
    pub architecture: Architecture,
}

impl Platform {
    /// `linux/amd64`.
    pub const LINUX_AMD64: Platform = Platform {
        os: OperatingSystem::Linux,
        architecture: Architecture::Amd64,
    };

    /// `linux/arm64`.
    pub const LINUX_ARM64: Platform = Platform {
        os: OperatingSystem::Linux,
        architecture: Architecture::Arm64,
    };
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)
    }
}

vocabulary! {
    /// How a provider obtains an instance's root filesystem.
    pub enum ImageMode: "image_mode" {
        /// The provider materializes the profile's derived image itself: the
        /// `root_image` by digest, plus the profile's packages through an
        /// advertised package manager (none advertised: no packages).
        Profile = "profile",
        /// The provider runs the workload on its own root filesystem and does
        /// not materialize `root_image`; it still echoes the request's image
        /// identity. Selection routes only profiles that accept that.
        Host = "host",
    }
}

vocabulary! {
    /// A package manager a provider can install profile packages with.
    pub enum PackageManager: "package_manager" {
        /// Debian/Ubuntu `apt`.
        Apt = "apt",
        /// Alpine `apk`.
        Apk = "apk",
        /// Fedora/RHEL `dnf`.
        Dnf = "dnf",
        /// Python `pip`.
        Pip = "pip",
        /// Node.js `npm`.
        Npm = "npm",
        /// Rust `cargo`.
        Cargo = "cargo",
    }
}

vocabulary! {
    /// A network mode a provider can enforce.
    pub enum NetworkMode: "network_mode" {
        /// No workload destinations ("plane route only").
        None = "none",
        /// Only the destinations a profile declares.
        Allowlist = "allowlist",
    }
}

vocabulary! {
    /// A retention mode a provider supports.
    pub enum RetentionMode: "retention_mode" {
        /// Zero data retention: release destroys every trace; snapshots are
        /// forbidden.
        EphemeralZdr = "ephemeral_zdr",
        /// Release settles a snapshot that a later `resume` rehydrates.
        Durable = "durable",
    }
}

vocabulary! {
    /// Who keeps snapshot bytes.
    #[derive(Default)]
    pub enum SnapshotCustody: "snapshot_custody" {
        /// The bytes live with the Runner that made them: a Checkpoint clone
        /// requires that exact Runner alive. The weakest value, and the default.
        #[default]
        Runner = "runner",
        /// The provider's platform retains the bytes independently of any
        /// Runner.
        Provider = "provider",
    }
}

vocabulary! {
    /// How strongly a provider restricts egress to an allowlist, weakest first
    /// (`Ord` follows strength).
    #[derive(Default)]
    pub enum EgressCertification: "egress_certification" {
        /// No destination filtering: an `allowlist` profile never selects the
        /// provider. The default.
        #[default]
        Unsupported = "unsupported",
        /// A filter outside the kernel's packet path (an HTTP/DNS proxy the
        /// workload is pointed at, a platform API rule) that honours the
        /// destination set but that a hostile workload might route around.
        AdvisoryFilter = "advisory_filter",
        /// Packet filtering the workload cannot bypass: rules in the
        /// instance's own network namespace or at the hypervisor/host boundary,
        /// default deny, only the declared destinations reachable.
        KernelEnforced = "kernel_enforced",
    }
}

impl EgressCertification {
    /// Whether this grade is at least `required`.
    pub fn meets(self, required: EgressCertification) -> bool {
        self >= required
    }
}
