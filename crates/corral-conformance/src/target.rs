//! What the suites run against: a [`Target`], which is a
//! [`ConformanceTarget`] for the contract suite and an [`SdkTarget`] for the
//! SDK suite. Every in-tree target of a backend is both.
//!
//! A contract target is generic over its provider type, so any
//! `SandboxProvider` (an adapter over a backend, a narrowed provider, a wire
//! client) can be held to the nine cases. The suite never calls the
//! provider directly: every case wraps a fresh provider in a
//! `corral_runtime::runtime::Runtime`. An SDK target gives the backend the
//! SDK builds its sandboxes on, with the checks it declares it cannot pass.

use std::collections::BTreeSet;
use std::future::{Future, ready};
use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, BackendError, Command, DEFAULT_PATH};
use corral_contract::{Digest, HostPort, ImageReference, SandboxError, SandboxProvider};

use crate::sdk::SdkConformanceOptions;

/// Anything a suite runs against.
pub trait Target: Send + Sync {
    /// The target's name, as reports show it (the contract suite also uses
    /// it as the `provider` identity of every request its cases send).
    fn name(&self) -> String;
}

/// A provider the conformance cases can be run against.
pub trait ConformanceTarget: Target {
    /// The provider type the target builds.
    type Provider: SandboxProvider + 'static;

    /// A fresh provider over the **same** backend state. Every case builds
    /// its runtime from one, and the orphan-reclaim case builds a second
    /// one after dropping the first: "a runtime restarted from nothing" must
    /// still find what the first one allocated.
    fn provider(&self) -> Result<Self::Provider, SandboxError>;

    /// The destinations and the probe the `network-none` case uses (both
    /// must be unreachable), or `None` when the target has no way to probe
    /// the network: that case is then a recorded skip naming what to give
    /// ([`NO_EGRESS_FIXTURE`]), never a pass: a restriction that cannot be
    /// observed is not proven.
    fn egress(&self) -> Option<EgressFixture>;

    /// The destinations the allowlist case uses: `allowed` must be
    /// reachable from an instance whose allowlist declares it, so it must
    /// be a host such an instance can route to (a loopback server of the
    /// host is not). The default is [`Self::egress`]; a target whose
    /// `network-none` fixture is the host's loopback has none of its own
    /// unless it was given one, and the case is then a recorded skip
    /// naming what to give ([`NO_EGRESS_FIXTURE`]).
    fn allowlist_egress(&self) -> Option<EgressFixture> {
        self.egress()
    }

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

/// A backend the SDK suite can be run against.
pub trait SdkTarget: Target {
    /// The backend every case builds its sandboxes on.
    fn backend(&self) -> Arc<dyn Backend>;

    /// The options this target runs with: `live` as its provider requires,
    /// and the checks it cannot pass, each with its reason. Only what truly
    /// cannot pass is declared: a skip of something that should work is a
    /// defect of the target.
    fn options(&self) -> SdkConformanceOptions;

    /// The command, run in the sandbox with `/workspace` as its working
    /// directory, that serves that directory over HTTP on `port` for the
    /// `http-probe` case. The default is Python's `http.server` bound to
    /// the loopback, for runtimes whose previews reach the sandbox's
    /// loopback.
    fn http_server(&self, port: u16) -> Command {
        python_http_server(port)
    }
}

/// `python3 -m http.server PORT --bind 127.0.0.1`: the `http-probe` case's
/// server unless a target names another.
pub fn python_http_server(port: u16) -> Command {
    Command::argv([
        "python3".to_string(),
        "-m".to_string(),
        "http.server".to_string(),
        port.to_string(),
        "--bind".to_string(),
        "127.0.0.1".to_string(),
    ])
    .expect("a fixed, valid command")
}

/// Whether an executable `program` is in one of the directories of the
/// `PATH` every backend gives commands ([`DEFAULT_PATH`]), on this host.
/// Backends whose sandboxes see the host's programs (local, linux with the
/// host image) use it to decide, honestly, whether a check needing that
/// program can run.
pub fn host_has_program(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    DEFAULT_PATH.split(':').any(|dir| {
        std::fs::metadata(Path::new(dir).join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The synthetic root image: `corral.invalid/conformance/root@sha256:…`,
/// its digest the SHA-256 of the text `corral conformance root image`.
pub fn synthetic_root_image() -> ImageReference {
    use sha2::{Digest as _, Sha256};
    let digest = Digest::from_sha256_bytes(Sha256::digest(b"corral conformance root image").into());
    ImageReference::from_parts("corral.invalid/conformance/root", &digest)
        .unwrap_or_else(|e| unreachable!("the synthetic image reference is valid: {e}"))
}

/// Why an egress case is skipped when its target has no fixture: what a
/// caller gives to run it (`corral conformance` takes the two flags).
pub const NO_EGRESS_FIXTURE: &str = "no egress fixture: name a destination the sandbox may reach \
     and one it must not, with --egress-allowed HOST:PORT and --egress-denied HOST:PORT";

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
    fn programs_are_found_on_the_default_path_only() {
        assert!(host_has_program("sh"), "every host has /bin/sh");
        assert!(!host_has_program("corral-no-such-program"));
        assert!(!host_has_program("../bin/sh/nothing"));
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
