//! Fixtures for corral's tests, kept out of the crates they test.
//!
//! A production crate exports nothing only for its tests: a fixture that
//! more than one crate's tests need, or that a test needs from outside the
//! crate it tests, lives here. Only test binaries take this crate, as a
//! dev-dependency: no production crate depends on it. (The conformance
//! suite shipped in the `corral` binary makes no test hosts of its own:
//! its allowlist case probes the destinations its caller names.)
//!
//! - [`testhost`]: test hosts in network namespaces of this machine, each
//!   serving a fixed HTTP answer on the ports asked for, which egress tests
//!   and the conformance tests' allowlist fixture reach (or fail to reach)
//!   through a sandbox's network policy.
//! - [`tls`]: a test PKI on disk (a CA, a server certificate it signed for
//!   loopback, its key and a key that does not match), for the TLS of
//!   `corral serve` and its clients.

pub mod testhost;
pub mod tls;
