//! The linux backend's integration tests, one binary: cgroups, contract
//! operations, crash recovery by gc, images, isolation, lifecycle, network,
//! previews, reclaim, the backend rules, seccomp, snapshots, a process's
//! streams, and the hostile suite
//! (`hostile`: attack → expected refusal, one module per area of the
//! security model). The shared fixture is `common`.

// The crate denies `unsafe` outside its two `sys` modules; the tests make
// raw calls of their own (hostile descriptors, seccomp probes, setting the
// environment), each with a `// SAFETY:` comment.
#![allow(unsafe_code)]

mod common;

mod cgroup;
mod contract_ops;
mod crash_gc;
mod hostile;
mod images;
mod isolation;
mod lifecycle;
mod network;
mod ports;
mod preview;
mod reclaim;
mod rules;
mod seccomp;
mod snapshots;
mod streams;
mod users;
