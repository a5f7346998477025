//! Hostile workloads through the real `corral` command line: what a user
//! who starts corral from a shell hands it, and what the sandbox refuses.
//! One module per area of the security model (`docs/security.md`).

#[path = "hostile/disk.rs"]
mod disk;
#[path = "hostile/fds.rs"]
mod fds;
