//! The linux backend's integration tests, one binary: cgroups, contract
//! operations, crash recovery by gc, images, isolation, lifecycle, network,
//! previews, reclaim, the backend rules, seccomp, snapshots, and the hostile suite
//! (`hostile`: attack → expected refusal, one module per area of the
//! security model). The shared fixture is `common`.

mod common;

mod cgroup;
mod contract_ops;
mod crash_gc;
mod hostile;
mod images;
mod isolation;
mod lifecycle;
mod network;
mod preview;
mod reclaim;
mod rules;
mod seccomp;
mod snapshots;
