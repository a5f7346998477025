//! What the suite runs against: a [`ConformanceTarget`].
//!
//! A target is generic over its provider type, so any `SandboxProvider`
//! (an adapter over a backend, a narrowed provider, a wire client) can be
//! held to the nine cases. The suite never calls the provider directly: every
//! case wraps a fresh provider in a `corral_runtime::runtime::Runtime`.

use std::collections::BTreeSet;
use std::future::{Future, ready};

use corral_backend::BackendError;
use corral_contract::{Digest, HostPort, ImageReference, SandboxError, SandboxProvider};

/// A provider the conformance cases can be run against.
pub trait ConformanceTarget: Send + Sync {
    /// The provider type the target builds.
    type Provider: SandboxProvider + 'static;

    /// The target's name, as reports show it (also used as the `provider`
    /// identity of every request the cases send).
    fn name(&self) -> String;

    /// A fresh provider over the **same** backend state. Every case builds
    /// its runtime from one, and the orphan-reclaim case builds a second
    /// one after dropping the first: "a runtime restarted from nothing" must
    /// still find what the first one allocated.
    fn provider(&self) -> Result<Self::Provider, SandboxError>;

    /// The destinations and the probe the egress cases use, or `None` when
    /// the target has no way to probe the network. A target that declares
    /// `network-none` or `network-allowlist` without a fixture fails those
    /// cases: a restriction that cannot be observed is not proven.
    fn egress(&self) -> Option<EgressFixture>;

    /// Every sandbox and snapshot the backing platform holds, when the
    /// target can observe them; `None` otherwise. The suite uses it to prove
    /// that what a case destroys is gone from the backend, and that no case
    /// leaks, without knowing how the provider names its allocations.
    fn inventory(&self) -> impl Future<Output = Option<Result<Inventory, BackendError>>> + Send {
        ready(None)
    }

    /// The root image the cases provision with. The default is a synthetic
    /// reference suitable for providers that run on their own root or
    /// simulate images; a target that materializes images names a real one
    /// (it needs `sh`, `cat`, `printf`, `ls`, `env`, `test`, `yes`, `head`
    /// and, for the egress cases, `curl`).
    fn root_image(&self) -> ImageReference {
        synthetic_root_image()
    }
}

/// The synthetic root image: `corral.invalid/conformance/root@sha256:…`,
/// its digest the SHA-256 of the text `corral conformance root image`.
pub fn synthetic_root_image() -> ImageReference {
    use sha2::{Digest as _, Sha256};
    let digest = Digest::from_sha256_bytes(Sha256::digest(b"corral conformance root image").into());
    ImageReference::from_parts("corral.invalid/conformance/root", &digest)
        .unwrap_or_else(|e| unreachable!("the synthetic image reference is valid: {e}"))
}

/// How the egress cases reach the network from inside an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressFixture {
    /// A destination the allowlist case declares and must reach.
    pub allowed: HostPort,
    /// A destination the allowlist case does not declare and must not reach.
    pub denied: HostPort,
    /// How a destination is probed with `execute`.
    pub probe: EgressProbe,
}

/// A way of probing one destination with `execute`. A closed set: each
/// probe says exactly which results mean "reached", "blocked" and
/// "inconclusive"; an inconclusive probe fails the case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressProbe {
    /// `curl -sS --connect-timeout 5 --max-time 10 http://HOST:PORT/`.
    /// Exit 6 (resolution failed), 7 (connection failed) or 28 (timed out),
    /// or the command's own timeout, is *blocked*; exit 0 or a failure that
    /// happens only after a connection exists (TLS, an empty or broken
    /// reply) is *reached*; anything else (curl missing, a signal) is
    /// inconclusive and fails the case.
    Curl,
}

/// What a backing platform holds: the ids of its sandboxes and snapshots, in
/// the backend's own naming.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Sandbox ids.
    pub sandboxes: BTreeSet<String>,
    /// Snapshot ids.
    pub snapshots: BTreeSet<String>,
}

impl Inventory {
    /// What this inventory holds that `before` did not.
    pub fn added_since(&self, before: &Inventory) -> Inventory {
        Inventory {
            sandboxes: self
                .sandboxes
                .difference(&before.sandboxes)
                .cloned()
                .collect(),
            snapshots: self
                .snapshots
                .difference(&before.snapshots)
                .cloned()
                .collect(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.sandboxes.is_empty() && self.snapshots.is_empty()
    }
}

impl std::fmt::Display for Inventory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
        write!(
            f,
            "sandboxes [{}], snapshots [{}]",
            join(&self.sandboxes),
            join(&self.snapshots)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_image_is_pinned_by_digest() {
        let image = synthetic_root_image();
        assert_eq!(image.name(), "corral.invalid/conformance/root");
        assert!(image.to_string().contains("@sha256:"));
    }

    #[test]
    fn inventories_subtract() {
        let set = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect();
        let before = Inventory {
            sandboxes: set(&["a"]),
            snapshots: set(&["s"]),
        };
        let after = Inventory {
            sandboxes: set(&["a", "b"]),
            snapshots: set(&[]),
        };
        let added = after.added_since(&before);
        assert_eq!(added.sandboxes, set(&["b"]));
        assert!(added.snapshots.is_empty());
        assert!(!added.is_empty());
        assert_eq!(added.to_string(), "sandboxes [b], snapshots []");
        assert!(before.added_since(&before).is_empty());
    }
}
