//! Hostile workloads and hostile clients through the real `corral` command
//! line: what a user who starts corral from a shell hands it, and what the
//! sandbox refuses — each attack is refused as the one-line error a user
//! sees, nothing of the host comes out, and the host stays bounded and
//! answering. One module per area of the security model
//! (`docs/security.md`).

#[path = "hostile/harness.rs"]
pub(crate) mod harness;

#[path = "hostile/disk.rs"]
mod disk;
#[path = "hostile/etc.rs"]
mod etc;
#[path = "hostile/fds.rs"]
mod fds;
#[path = "hostile/host.rs"]
mod host;
#[path = "hostile/lifetime.rs"]
mod lifetime;
#[path = "hostile/network.rs"]
mod network;
#[path = "hostile/reclaim.rs"]
mod reclaim;
#[path = "hostile/rootless.rs"]
mod rootless;
#[path = "hostile/userns.rs"]
mod userns;
