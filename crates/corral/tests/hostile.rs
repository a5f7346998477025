//! Hostile workloads through the real command line: the `corral` binary on
//! a private state directory, on the linux backend.

#[path = "hostile/userns.rs"]
mod userns;
