//! The envelope each in-tree backend declares behind a
//! [`ContractAdapter`](corral_runtime::adapter::ContractAdapter).
//!
//! An envelope says what a provider does, not what it hopes. Two honest ones:
//!
//! # `memory()` — the deterministic oracle, simulated
//!
//! Every capability and every conformance token, because the memory backend
//! *simulates* every primitive: its sandboxes are file trees in the Runner's
//! own memory and its "processes" are tasks running a built-in shell. Nothing
//! it claims is a property of a kernel — the tier is `simulated`, which
//! selection for a real workload must never accept. Within the simulation:
//!
//! - `network_modes: [none, allowlist]`, `egress_certification:
//!   kernel_enforced`: a simulated workload has no sockets at all; its only
//!   way out is the built-in `curl`, which reaches exactly the allowlisted
//!   `host:port` pairs and nothing under `none`. No route around the filter
//!   exists inside the simulation, which is what `kernel_enforced` grades;
//! - `filesystem_isolation`, `process_isolation`, `network_egress`,
//!   `process_count_limit` (`limits.pids`), `output_bounds` (the adapter keeps
//!   at most `output_limit_bytes` per stream and never buffers more) are
//!   `provider_enforced` — by the simulation;
//! - `memory_limit`, `cpu_limit`: `not_enforced` (the backend only records
//!   them);
//! - `read_only_mounts`: `not_enforced`. Sealing is recorded and the trusted
//!   port refuses every later write to a `read_only` mount, but the built-in
//!   shell can still write there: no backend primitive seals a directory;
//! - `wall_clock_timeout`: `runner_enforced`. Command timeouts are the
//!   backend's, an instance's `expires_at` is held by `cleanup`, which the
//!   Runner drives;
//! - `snapshot_custody: runner`: snapshots live in the backend, in the
//!   Runner's process, and die with it;
//! - `image_mode: host`, no package managers: there is no image store;
//!   `root_image` is echoed, never materialized.
//!
//! # `local()` / `local_for(capabilities)` — host processes, no isolation
//!
//! `placement: local`, tier `process`, the host's platform. The local backend
//! isolates nothing, and what it enforces at `create` depends on the host:
//! where commands can be started in a new, empty network namespace it
//! enforces `network: none`, and nothing else.
//!
//! - [`local_for`] reads that from the backend's declared capabilities
//!   (`LocalBackend::capabilities()`): `network_modes: [none, allowlist]`
//!   with `network_egress: best_effort` when the backend enforces `none`
//!   (the namespace holds against any program that opens sockets, but a
//!   workload running as root on the host can enter another namespace), and
//!   `[allowlist]` with `network_egress: not_enforced` when it does not.
//!   [`local`] is the envelope of a host that cannot drop the network — the
//!   one claim that is true on every host.
//! - The allowlist is declared with `egress_certification: unsupported` —
//!   the contract's own spelling of "accepts an allowlist profile, filters
//!   nothing": the `network-allowlist` token is never derived, so
//!   `allowlist-egress` is a recorded skip, and selection never routes an
//!   allowlist profile to an uncertified provider. The adapter asks the
//!   backend for no network restriction for such a profile — exactly what
//!   the envelope declares. Without `none`, `none-egress` is a recorded skip
//!   too and a `none` profile is refused at provision with
//!   `SandboxCapabilityUnavailable{network_policy}`.
//! - snapshots (durable) and clones, contained reads (the kernel's
//!   `openat2`), `readFiles`, `listDir`, `listProjectDir` and `openProcess`
//!   are real; `active_mount_write` is not (the backend has no atomic batch
//!   write);
//! - every other enforcement axis is `not_enforced` except `output_bounds`
//!   (`provider_enforced`, by the adapter) and `wall_clock_timeout`
//!   (`best_effort`: a command's timeout kills its process group, but a
//!   process that leaves the group on purpose outlives it, and nothing ends
//!   the instance at `expires_at` but `cleanup`).
//!
//! # `linux_for(capabilities)` — corral's own namespaces and cgroups
//!
//! `placement: local`, tier `container`, the host's platform. Every sandbox
//! has its own mount, pid, uts, ipc, net and cgroup namespaces and a
//! pivoted root, so `filesystem_isolation` and `process_isolation` are
//! `provider_enforced`. [`linux_for`] reads the rest from the backend's
//! declared capabilities (`LinuxBackend::capabilities()`):
//!
//! - `network_modes: [none]` (a fresh network namespace with loopback only),
//!   plus `allowlist` certified `kernel_enforced` only where the backend
//!   enforces allowlists; `network_egress` is `provider_enforced` because
//!   every listed mode is enforced by the kernel. Without allowlists,
//!   `allowlist-egress` is a recorded skip and an allowlist profile is
//!   refused at provision;
//! - `memory_limit`, `cpu_limit`, `process_count_limit`: `provider_enforced`
//!   exactly where the backend enforces them (its cgroups), else
//!   `not_enforced`;
//! - `read_only_mounts`: `not_enforced` — the adapter seals mounts at its
//!   trusted port only (and refuses any stronger claim);
//! - `wall_clock_timeout`: `runner_enforced` — a command's timeout kills its
//!   whole process tree, but the instance's `expires_at` is held by
//!   `cleanup`, which the Runner drives; `output_bounds`: by the adapter;
//! - snapshots (durable, in the backend's state directory) and clones,
//!   contained reads (`openat2` beneath the allowed root), `readFiles`,
//!   `listDir`, `listProjectDir`, `openProcess`, and `active_mount_write`
//!   where the backend writes batches atomically.
//!
//! `ephemeral_zdr` is declared by all three: a ZDR instance is never snapshotted,
//! and `release` destroys its sandbox — every file the provider holds for it.

use corral_backend::Capabilities;
use corral_contract::{
    CapabilityDeclaration, EgressCertification, Enforcement, EnforcementLevel, ImageMode,
    MaxMounts, NetworkMode, Placement, Platform, RetentionMode, Revision,
    SandboxProviderCapabilities, SnapshotCustody, Tier,
};

/// The crate's version, part of both providers' revisions.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The host platform the local backend runs workloads on. The contract names
/// `linux/amd64` and `linux/arm64` only; corral's contract envelope cannot
/// describe any other host, so the crate does not build for one.
#[cfg(target_arch = "x86_64")]
const HOST_PLATFORM: Platform = Platform::LINUX_AMD64;
#[cfg(target_arch = "aarch64")]
const HOST_PLATFORM: Platform = Platform::LINUX_ARM64;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the contract names linux/amd64 and linux/arm64 only");

fn revision(text: String) -> Revision {
    // The texts below are short printable ASCII without spaces.
    Revision::new(text).unwrap_or_else(|_| unreachable!("revisions are valid ids"))
}

fn build(declaration: CapabilityDeclaration) -> SandboxProviderCapabilities {
    SandboxProviderCapabilities::new(declaration)
        .unwrap_or_else(|e| unreachable!("the in-tree envelopes are valid: {e}"))
}

/// The memory oracle's envelope: every capability and token, all simulated
/// (see the module documentation).
pub fn memory() -> SandboxProviderCapabilities {
    use EnforcementLevel::{NotEnforced, ProviderEnforced, RunnerEnforced};
    build(CapabilityDeclaration {
        placement: Placement::Local,
        tiers: vec![Tier::Simulated],
        platforms: vec![Platform::LINUX_AMD64, Platform::LINUX_ARM64],
        image_mode: ImageMode::Host,
        package_managers: Vec::new(),
        network_modes: vec![NetworkMode::None, NetworkMode::Allowlist],
        retention_modes: vec![RetentionMode::EphemeralZdr, RetentionMode::Durable],
        snapshots: true,
        snapshot_custody: SnapshotCustody::Runner,
        snapshot_clone: true,
        list_dir: true,
        list_project_dir: true,
        read_files: true,
        physically_contained_file_read: true,
        active_mount_write: true,
        open_process: true,
        egress_certification: EgressCertification::KernelEnforced,
        enforcement: Enforcement {
            filesystem_isolation: ProviderEnforced,
            process_isolation: ProviderEnforced,
            network_egress: ProviderEnforced,
            read_only_mounts: NotEnforced,
            memory_limit: NotEnforced,
            cpu_limit: NotEnforced,
            process_count_limit: ProviderEnforced,
            wall_clock_timeout: RunnerEnforced,
            output_bounds: ProviderEnforced,
        },
        max_mounts: MaxMounts::MAX,
        provider_revision: revision(format!("corral-memory-{VERSION}")),
        materialization_revision: revision(format!("corral-host-{VERSION}")),
    })
}

/// The local backend's envelope on a host that cannot drop the network:
/// real snapshots, contained reads, listings and live processes; no
/// isolation and no network enforcement (see the module documentation).
pub fn local() -> SandboxProviderCapabilities {
    build(local_declaration(false))
}

/// The local backend's envelope for a backend declaring `capabilities`
/// (pass `LocalBackend::capabilities()`): [`local`], plus the `none` network
/// mode, graded `best_effort`, where the backend enforces `network: none` on
/// this host. Only `enforces.network_none` varies between hosts; every other
/// claim is [`local`]'s.
pub fn local_for(capabilities: &Capabilities) -> SandboxProviderCapabilities {
    build(local_declaration(capabilities.enforces.network_none))
}

/// The linux backend's envelope for a backend declaring `capabilities`
/// (pass `LinuxBackend::capabilities()`; see the module documentation).
pub fn linux_for(capabilities: &Capabilities) -> SandboxProviderCapabilities {
    build(container_declaration(
        capabilities,
        capabilities.enforces.network_allowlist,
        "corral-linux",
        "corral-host",
    ))
}

/// The docker backend's envelope for a backend declaring `capabilities`
/// (pass `DockerBackend::capabilities()`).
///
/// `placement: local`, tier `container`, the host's platform: every
/// sandbox is a container of a Docker Engine (its own mount, pid, uts, ipc
/// and net namespaces and cgroup), so `filesystem_isolation` and
/// `process_isolation` are `provider_enforced`.
///
/// - `network_modes: [none]` (`--network none`: a namespace with loopback
///   only), `network_egress: provider_enforced`. No allowlist: the engine
///   has no per-destination egress filter corral could make
///   kernel-enforced from the API alone, so — as the contract's own Docker
///   provider does — `allowlist` is absent, `egress_certification:
///   unsupported`, `allowlist-egress` is a recorded skip and an allowlist
///   profile is refused at provision;
/// - `memory_limit`, `cpu_limit`, `process_count_limit`: `provider_enforced`
///   exactly where the backend enforces them (the engine's cgroups);
/// - `read_only_mounts`: `not_enforced` (sealed at the adapter's port);
///   `wall_clock_timeout`: `runner_enforced`; `output_bounds`: by the adapter;
/// - snapshots are `docker commit` images in the engine (custody `runner`:
///   the engine on the Runner's machine holds them), clones are new
///   commits; contained reads, `readFiles`, `listDir` and `listProjectDir`
///   only where the engine is local with overlay2 (`openat2` beneath the
///   container's merged root), else absent and failing closed; no
///   `openProcess`, no `active_mount_write`;
/// - `image_mode: host`: sandboxes start from the backend's configured
///   image; a profile's `root_image` is echoed, never pulled.
pub fn docker_for(capabilities: &Capabilities) -> SandboxProviderCapabilities {
    build(container_declaration(
        capabilities,
        false,
        "corral-docker",
        "corral-docker-image",
    ))
}

/// The declaration of a container backend (linux, docker) declaring
/// `capabilities`: isolation by the provider, `none` where the backend drops
/// the network, `allowlist` certified `kernel_enforced` only where
/// `allowlist` (the backend filters egress in the kernel), limits graded
/// exactly as the backend enforces them. The revisions are
/// `<provider>-<version>` and `<materialization>-<version>`.
fn container_declaration(
    capabilities: &Capabilities,
    allowlist: bool,
    provider: &str,
    materialization: &str,
) -> CapabilityDeclaration {
    use EnforcementLevel::{NotEnforced, ProviderEnforced, RunnerEnforced};
    let enforces = &capabilities.enforces;
    let level = |enforced: bool| {
        if enforced {
            ProviderEnforced
        } else {
            NotEnforced
        }
    };
    let mut network_modes = Vec::new();
    if enforces.network_none {
        network_modes.push(NetworkMode::None);
    }
    let egress_certification = if allowlist {
        network_modes.push(NetworkMode::Allowlist);
        EgressCertification::KernelEnforced
    } else {
        EgressCertification::Unsupported
    };
    CapabilityDeclaration {
        placement: Placement::Local,
        tiers: vec![Tier::Container],
        platforms: vec![HOST_PLATFORM],
        image_mode: ImageMode::Host,
        package_managers: Vec::new(),
        network_modes,
        // A durable release settles a snapshot: only where there are any
        // (a rootless linux backend has none).
        retention_modes: if capabilities.snapshot {
            vec![RetentionMode::EphemeralZdr, RetentionMode::Durable]
        } else {
            vec![RetentionMode::EphemeralZdr]
        },
        snapshots: capabilities.snapshot,
        snapshot_custody: SnapshotCustody::Runner,
        snapshot_clone: capabilities.snapshot_clone,
        list_dir: capabilities.list_tree,
        list_project_dir: capabilities.list_tree,
        read_files: capabilities.contained_read,
        physically_contained_file_read: capabilities.contained_read,
        active_mount_write: capabilities.write_batch,
        open_process: capabilities.start_process,
        egress_certification,
        enforcement: Enforcement {
            filesystem_isolation: ProviderEnforced,
            process_isolation: ProviderEnforced,
            network_egress: level(enforces.network_none),
            read_only_mounts: NotEnforced,
            memory_limit: level(enforces.memory),
            cpu_limit: level(enforces.cpu),
            process_count_limit: level(enforces.pids),
            wall_clock_timeout: RunnerEnforced,
            output_bounds: ProviderEnforced,
        },
        max_mounts: MaxMounts::MAX,
        provider_revision: revision(format!("{provider}-{VERSION}")),
        materialization_revision: revision(format!("{materialization}-{VERSION}")),
    }
}

fn local_declaration(drops_network: bool) -> CapabilityDeclaration {
    use EnforcementLevel::{BestEffort, NotEnforced, ProviderEnforced};
    let (network_modes, network_egress) = if drops_network {
        (vec![NetworkMode::None, NetworkMode::Allowlist], BestEffort)
    } else {
        (vec![NetworkMode::Allowlist], NotEnforced)
    };
    CapabilityDeclaration {
        placement: Placement::Local,
        tiers: vec![Tier::Process],
        platforms: vec![HOST_PLATFORM],
        image_mode: ImageMode::Host,
        package_managers: Vec::new(),
        network_modes,
        retention_modes: vec![RetentionMode::EphemeralZdr, RetentionMode::Durable],
        snapshots: true,
        snapshot_custody: SnapshotCustody::Runner,
        snapshot_clone: true,
        list_dir: true,
        list_project_dir: true,
        read_files: true,
        physically_contained_file_read: true,
        active_mount_write: false,
        open_process: true,
        egress_certification: EgressCertification::Unsupported,
        enforcement: Enforcement {
            network_egress,
            wall_clock_timeout: BestEffort,
            output_bounds: ProviderEnforced,
            ..Enforcement::uniform(NotEnforced)
        },
        max_mounts: MaxMounts::MAX,
        provider_revision: revision(format!("corral-local-{VERSION}")),
        materialization_revision: revision(format!("corral-host-{VERSION}")),
    }
}
