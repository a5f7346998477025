//! Conformance capability tokens and the nine conformance cases.
//!
//! "Each case names the capability tokens it requires, and a target declares
//! the tokens it has, so you can predict your own skips from your envelope
//! before running anything." corral derives a target's tokens from its
//! envelope ([`SandboxProviderCapabilities::conformance_tokens`]).

use std::collections::BTreeSet;

use super::{NetworkMode, RetentionMode, SandboxProviderCapabilities};
use crate::macros::vocabulary;

vocabulary! {
    /// A conformance capability token (kebab-case on the wire).
    pub enum CapabilityToken: "capability token" {
        /// Mount staging and physically contained reads.
        Filesystem = "filesystem",
        /// Bounded command execution.
        Process = "process",
        /// Snapshot capture (and, for the clone case, clone).
        Snapshot = "snapshot",
        /// Allowlist egress with a real certification.
        NetworkAllowlist = "network-allowlist",
        /// Denied egress.
        NetworkNone = "network-none",
        /// Zero data retention.
        Zdr = "zdr",
        /// Orphan sweeping.
        Cleanup = "cleanup",
    }
}

vocabulary! {
    /// The nine conformance cases.
    pub enum ConformanceCase: "conformance case" {
        /// "declared mounts stage, read-only data seals, command output is
        /// bounded" (asserts a `readFile` round trip through the output tree).
        StageSealExecute = "stage-seal-execute",
        /// "an immutable Git blob stages without a sandbox credential" (only
        /// uses `execute`).
        StageGitProject = "stage-git-project",
        /// "a clone lands in an independent target-Session snapshot".
        CheckpointClone = "checkpoint-clone",
        /// "only the declared outbound hosts are reachable".
        AllowlistEgress = "allowlist-egress",
        /// "files survive snapshot → release → resume".
        DurableRoundTrip = "durable-round-trip",
        /// "outbound traffic is denied for a `none`-network profile".
        NoneEgress = "none-egress",
        /// "ZDR snapshots are forbidden and release destroys all state".
        ZdrRelease = "zdr-release",
        /// "expired instances are reclaimed without a database reset".
        OrphanReclaim = "orphan-reclaim",
        /// "a pause-pinned snapshot survives orphan cleanup until its own
        /// expiry".
        PausePinning = "pause-pinning",
    }
}

impl ConformanceCase {
    /// The tokens the case requires (the contract's conformance table).
    pub const fn required_tokens(self) -> &'static [CapabilityToken] {
        use CapabilityToken as T;
        match self {
            Self::StageSealExecute | Self::StageGitProject => &[T::Filesystem, T::Process],
            Self::CheckpointClone | Self::DurableRoundTrip => &[T::Snapshot],
            Self::AllowlistEgress => &[T::NetworkAllowlist],
            Self::NoneEgress => &[T::NetworkNone],
            Self::ZdrRelease => &[T::Zdr],
            Self::OrphanReclaim => &[T::Cleanup],
            Self::PausePinning => &[T::Snapshot, T::Cleanup],
        }
    }

    /// The required tokens a target lacks; empty means the case runs, anything
    /// else is a recorded skip naming these tokens.
    pub fn missing_tokens(self, declared: &BTreeSet<CapabilityToken>) -> Vec<CapabilityToken> {
        self.required_tokens()
            .iter()
            .copied()
            .filter(|t| !declared.contains(t))
            .collect()
    }

    /// Whether a target declaring `declared` runs this case.
    pub fn runs_with(self, declared: &BTreeSet<CapabilityToken>) -> bool {
        self.missing_tokens(declared).is_empty()
    }
}

impl SandboxProviderCapabilities {
    /// The conformance tokens this envelope earns:
    ///
    /// | token | derived when |
    /// |---|---|
    /// | `filesystem` | `max_mounts > 0` **and** `physically_contained_file_read` (mounts stage, and `stage-seal-execute` can read back) |
    /// | `process` | always (`execute` is a required member) |
    /// | `snapshot` | `snapshots` |
    /// | `network-allowlist` | `allowlist ∈ network_modes` **and** `egress_certification ≠ unsupported` |
    /// | `network-none` | `none ∈ network_modes` |
    /// | `zdr` | `ephemeral_zdr ∈ retention_modes` |
    /// | `cleanup` | always (`cleanup` is a required member) |
    ///
    /// The minimum provider earns `process`, `network-none`, `zdr` and
    /// `cleanup`: it runs `none` egress, ZDR release and orphan reclaim, and
    /// records six skips of nine.
    pub fn conformance_tokens(&self) -> BTreeSet<CapabilityToken> {
        let mut tokens = BTreeSet::new();
        if self.max_mounts.get() > 0 && self.physically_contained_file_read {
            tokens.insert(CapabilityToken::Filesystem);
        }
        tokens.insert(CapabilityToken::Process);
        if self.snapshots {
            tokens.insert(CapabilityToken::Snapshot);
        }
        if self.network_modes.contains(&NetworkMode::Allowlist)
            && self.egress_certification != super::EgressCertification::Unsupported
        {
            tokens.insert(CapabilityToken::NetworkAllowlist);
        }
        if self.network_modes.contains(&NetworkMode::None) {
            tokens.insert(CapabilityToken::NetworkNone);
        }
        if self.retention_modes.contains(&RetentionMode::EphemeralZdr) {
            tokens.insert(CapabilityToken::Zdr);
        }
        tokens.insert(CapabilityToken::Cleanup);
        tokens
    }

    /// The cases this envelope runs and the ones it records as skips, each
    /// with the tokens it lacks, in the contract's case order.
    pub fn conformance_plan(&self) -> Vec<(ConformanceCase, Vec<CapabilityToken>)> {
        let tokens = self.conformance_tokens();
        ConformanceCase::ALL
            .iter()
            .map(|case| (*case, case.missing_tokens(&tokens)))
            .collect()
    }
}
