//! The nine enforcement axes and who enforces each.
//!
//! The contract requires an `enforcement` object of "nine axes" without naming
//! them. corral names the nine properties a workload could break out of — the
//! ones the security tests attack (escapes, fork bombs, memory hogs, output
//! floods, egress to a host not on the list) — and asks the provider to say,
//! per axis, who holds the line. An axis not declared is `not_enforced`:
//! absence never claims protection.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::vocabulary;

vocabulary! {
    /// One enforcement axis of a capability envelope.
    pub enum EnforcementAxis: "enforcement axis" {
        /// The workload cannot read or write the host's (or another
        /// instance's) files outside its own root and declared mounts.
        FilesystemIsolation = "filesystem_isolation",
        /// The workload cannot see, signal or trace processes outside its
        /// instance.
        ProcessIsolation = "process_isolation",
        /// The profile's network policy holds: `none` reaches nothing,
        /// `allowlist` reaches only its destinations.
        NetworkEgress = "network_egress",
        /// `read_only` mounts cannot be modified by the workload once sealed
        /// at `activate`.
        ReadOnlyMounts = "read_only_mounts",
        /// The instance's memory use is capped (a memory hog is stopped, not
        /// the host).
        MemoryLimit = "memory_limit",
        /// The instance's CPU use is capped.
        CpuLimit = "cpu_limit",
        /// The instance's number of processes is capped (a fork bomb is
        /// contained).
        ProcessCountLimit = "process_count_limit",
        /// `execute.timeout_seconds` and the instance's `expires_at` end the
        /// work: nothing the workload starts outlives them.
        WallClockTimeout = "wall_clock_timeout",
        /// `execute.output_limit_bytes` holds per stream: an output flood costs
        /// neither the provider nor the Runner more than the limit.
        OutputBounds = "output_bounds",
    }
}

vocabulary! {
    /// Who enforces one axis. The set is closed and ordered from "nothing" to
    /// "the provider's own boundary"; a provider declares the value it can
    /// prove, not the one it hopes for.
    #[derive(Default)]
    pub enum EnforcementLevel: "enforcement level" {
        /// Nothing enforces the axis; a profile's demand on it is advisory.
        /// The weakest value, and the default of an undeclared axis.
        #[default]
        NotEnforced = "not_enforced",
        /// The provider applies a mechanism that can fail open or that a
        /// hostile workload can defeat (polling, a userspace watchdog, a
        /// cooperative limit).
        BestEffort = "best_effort",
        /// The provider does nothing on this axis; the Runner (the corral
        /// runtime) holds the line from its side of the seam — e.g. it
        /// truncates and refuses over-limit output, or destroys the instance
        /// at its deadline. Only as strong as the Runner's reach.
        RunnerEnforced = "runner_enforced",
        /// The provider's platform enforces the axis with a mechanism outside
        /// the workload's control (kernel namespaces, cgroups, seccomp, a
        /// hypervisor, the platform's API).
        ProviderEnforced = "provider_enforced",
    }
}

impl EnforcementLevel {
    /// Whether anything guarantees the axis (`runner_enforced` or
    /// `provider_enforced`).
    pub fn is_guaranteed(self) -> bool {
        matches!(self, Self::RunnerEnforced | Self::ProviderEnforced)
    }
}

/// The nine axes, each with its [`EnforcementLevel`]. Every axis is optional
/// on decode and defaults to `not_enforced`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Enforcement {
    /// See [`EnforcementAxis::FilesystemIsolation`].
    #[serde(default)]
    pub filesystem_isolation: EnforcementLevel,
    /// See [`EnforcementAxis::ProcessIsolation`].
    #[serde(default)]
    pub process_isolation: EnforcementLevel,
    /// See [`EnforcementAxis::NetworkEgress`].
    #[serde(default)]
    pub network_egress: EnforcementLevel,
    /// See [`EnforcementAxis::ReadOnlyMounts`].
    #[serde(default)]
    pub read_only_mounts: EnforcementLevel,
    /// See [`EnforcementAxis::MemoryLimit`].
    #[serde(default)]
    pub memory_limit: EnforcementLevel,
    /// See [`EnforcementAxis::CpuLimit`].
    #[serde(default)]
    pub cpu_limit: EnforcementLevel,
    /// See [`EnforcementAxis::ProcessCountLimit`].
    #[serde(default)]
    pub process_count_limit: EnforcementLevel,
    /// See [`EnforcementAxis::WallClockTimeout`].
    #[serde(default)]
    pub wall_clock_timeout: EnforcementLevel,
    /// See [`EnforcementAxis::OutputBounds`].
    #[serde(default)]
    pub output_bounds: EnforcementLevel,
}

impl Enforcement {
    /// Every axis at the same level.
    pub const fn uniform(level: EnforcementLevel) -> Self {
        Self {
            filesystem_isolation: level,
            process_isolation: level,
            network_egress: level,
            read_only_mounts: level,
            memory_limit: level,
            cpu_limit: level,
            process_count_limit: level,
            wall_clock_timeout: level,
            output_bounds: level,
        }
    }

    /// The level of one axis.
    pub fn level(&self, axis: EnforcementAxis) -> EnforcementLevel {
        match axis {
            EnforcementAxis::FilesystemIsolation => self.filesystem_isolation,
            EnforcementAxis::ProcessIsolation => self.process_isolation,
            EnforcementAxis::NetworkEgress => self.network_egress,
            EnforcementAxis::ReadOnlyMounts => self.read_only_mounts,
            EnforcementAxis::MemoryLimit => self.memory_limit,
            EnforcementAxis::CpuLimit => self.cpu_limit,
            EnforcementAxis::ProcessCountLimit => self.process_count_limit,
            EnforcementAxis::WallClockTimeout => self.wall_clock_timeout,
            EnforcementAxis::OutputBounds => self.output_bounds,
        }
    }

    /// Sets the level of one axis.
    pub fn set(&mut self, axis: EnforcementAxis, level: EnforcementLevel) {
        let slot = match axis {
            EnforcementAxis::FilesystemIsolation => &mut self.filesystem_isolation,
            EnforcementAxis::ProcessIsolation => &mut self.process_isolation,
            EnforcementAxis::NetworkEgress => &mut self.network_egress,
            EnforcementAxis::ReadOnlyMounts => &mut self.read_only_mounts,
            EnforcementAxis::MemoryLimit => &mut self.memory_limit,
            EnforcementAxis::CpuLimit => &mut self.cpu_limit,
            EnforcementAxis::ProcessCountLimit => &mut self.process_count_limit,
            EnforcementAxis::WallClockTimeout => &mut self.wall_clock_timeout,
            EnforcementAxis::OutputBounds => &mut self.output_bounds,
        };
        *slot = level;
    }

    /// The nine axes with their levels, in declaration order.
    pub fn axes(&self) -> [(EnforcementAxis, EnforcementLevel); 9] {
        let mut out = [(
            EnforcementAxis::FilesystemIsolation,
            EnforcementLevel::NotEnforced,
        ); 9];
        for (slot, axis) in out.iter_mut().zip(EnforcementAxis::ALL) {
            *slot = (*axis, self.level(*axis));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_exactly_nine_axes() {
        assert_eq!(EnforcementAxis::ALL.len(), 9);
        let e = Enforcement::uniform(EnforcementLevel::BestEffort);
        let json = serde_json::to_value(e).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 9);
        for axis in EnforcementAxis::ALL {
            assert!(json.get(axis.as_str()).is_some(), "{axis}");
        }
    }

    #[test]
    fn undeclared_axes_are_not_enforced() {
        let e: Enforcement =
            serde_json::from_str(r#"{"memory_limit":"provider_enforced"}"#).unwrap();
        assert_eq!(
            e.level(EnforcementAxis::MemoryLimit),
            EnforcementLevel::ProviderEnforced
        );
        assert_eq!(
            e.level(EnforcementAxis::CpuLimit),
            EnforcementLevel::NotEnforced
        );
    }
}
