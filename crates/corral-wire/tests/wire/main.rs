//! The wire's integration tests, one binary: the server and the remote backend
//! over loopback, the contract's conformance over the wire, authentication,
//! bounds, faults (through `fault_proxy`), golden vectors and the kit. The
//! shared fixtures are `common` and `fault_proxy`.

mod common;
mod fault_proxy;

mod auth_and_bounds;
mod bounded_read;
mod conformance_linux;
mod conformance_memory;
mod faults;
mod golden;
mod handoffs_and_transactions;
mod kit_drift;
mod listings_and_reads;
mod open_process;
mod remote_backend;
mod remote_rules;
mod replay;
