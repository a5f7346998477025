//! Hostile workloads through the real `corral` command line: what a user
//! who starts corral from a shell hands it, and what the sandbox refuses —
//! each attack is refused as the one-line error a user sees, and nothing of
//! the host comes out. One module per area of the security model
//! (`docs/security.md`).

#[path = "hostile/harness.rs"]
mod harness;

#[path = "hostile/disk.rs"]
mod disk;
#[path = "hostile/etc.rs"]
mod etc;
#[path = "hostile/fds.rs"]
mod fds;
#[path = "hostile/userns.rs"]
mod userns;
