//! The wire's tests that need a provider from above the wire: the server
//! and the remote backend over loopback, hosting the memory oracle behind
//! its registry envelope; the contract's nine cases over the wire
//! (memory, and linux where this host can make linux sandboxes);
//! authentication, bounds, faults (through `fault_proxy`), replays,
//! connection reuse and TLS.
//! They live here, not in `corral-wire`, because the envelopes are the
//! registry's and the suite is this crate's, and both sit above the wire.
//! The shared fixtures are `common` (a conformance target over the wire,
//! and the servers the other tests start) and `fault_proxy`.

pub(crate) mod common;
mod fault_proxy;

mod auth_and_bounds;
mod bounded_read;
mod conformance_linux;
mod conformance_memory;
mod faults;
mod handoffs_and_transactions;
mod listings_and_reads;
mod open_process;
mod remote_backend;
mod remote_rules;
mod replay;
mod reuse;
mod tls;
