//! Fixtures for corral's tests, kept out of the crates they test.
//!
//! A production crate exports nothing only for its tests: a fixture that
//! more than one crate's tests need, or that a test needs from outside the
//! crate it tests, lives here. Test binaries take this crate as a
//! dev-dependency. The one normal dependent is `corral-conformance`,
//! because the conformance suite is a test harness shipped in the `corral`
//! binary and needs these fixtures when it runs; no backend, the runtime,
//! the wire, the SDK or the registry depends on it.
//!
//! - [`testhost`]: test hosts in network namespaces of this machine, each
//!   serving a fixed HTTP answer on the ports asked for, which egress tests
//!   and the conformance suite's allowlist fixture reach (or fail to reach)
//!   through a sandbox's network policy.

pub mod testhost;
