//! # corral-conformance
//!
//! The provider contract's nine conformance cases as test objects, run
//! against any [`ConformanceTarget`]; and the SDK's conformance suite
//! ([`sdk`]), run against any backend through the SDK. Both suites leave
//! their evidence in one [`Report`] type, one line per case
//! ([`Report`] for the contract suite, `Report<SdkCase>` for the SDK's,
//! the difference being what [`SuiteCase`] records of a run and a case).
//!
//! | case | requires | proves |
//! |---|---|---|
//! | `stage-seal-execute` | `filesystem`, `process` | declared mounts stage, read-only data seals, command output is bounded; a `readFile` round trip through the output tree |
//! | `stage-git-project` | `filesystem`, `process` | an immutable Git blob stages without a sandbox credential (observed with `execute` only) |
//! | `checkpoint-clone` | `snapshot` | a clone lands in an independent target-Session snapshot |
//! | `allowlist-egress` | `network-allowlist` | only the declared outbound destinations are reachable |
//! | `durable-round-trip` | `snapshot` | files survive snapshot → release → resume |
//! | `none-egress` | `network-none` | outbound traffic is denied for a `none`-network profile |
//! | `zdr-release` | `zdr` | ZDR snapshots are forbidden and release destroys all state |
//! | `orphan-reclaim` | `cleanup` | orphaned instances are reclaimed by a runtime restarted from nothing |
//! | `pause-pinning` | `snapshot`, `cleanup` | a pinned snapshot survives orphan cleanup until its own expiry |
//!
//! Every case drives a `corral_runtime::runtime::Runtime` over a fresh
//! provider of the target — never the raw provider — so what is proven is
//! what a caller of corral gets. A case whose tokens the target's envelope
//! does not earn is a recorded skip naming the missing tokens, never a
//! silent pass. A case cleans up what it allocated even when it fails, and
//! where the target can list its backend's sandboxes and snapshots
//! ([`ConformanceTarget::inventory`]) a case that leaves anything behind
//! fails.
//!
//! The cases that sweep (`orphan-reclaim`, `pause-pinning`) reclaim
//! whatever the provider holds from before their cutoff: run the suite
//! against a provider dedicated to it.
//!
//! A report can be signed with ed25519 as [`Evidence`] and verified by
//! anyone holding the signer's public key ([`evidence`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), corral_contract::SandboxError> {
//! use corral_conformance::{Outcome, run, targets::MemoryTarget};
//!
//! let report = run(&MemoryTarget::new()).await?;
//! print!("{}", report.table());
//! assert_eq!(report.count(Outcome::Failed), 0);
//! # Ok(())
//! # }
//! ```

mod case;
mod cases;
pub mod evidence;
mod exec;
mod failure;
mod git;
mod probe;
mod report;
mod request;
mod scope;
pub mod sdk;
mod suite;
mod target;
pub mod targets;

pub use case::{ContractRun, NoDetail, RequiredTokens, SuiteCase};
pub use evidence::{Evidence, EvidenceError, PublicKey, SecretKey};
pub use report::{CaseReport, Observer, Outcome, Report, Unobserved};
pub use suite::{CASE_BOUND, CLEANUP_BOUND, Suite, run, run_cases, run_observed};
pub use target::{
    ConformanceTarget, EgressFixture, EgressProbe, Inventory, NO_EGRESS_FIXTURE, SdkTarget, Target,
    host_has_program, python_http_server, synthetic_root_image,
};
