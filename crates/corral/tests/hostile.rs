//! Hostile workloads through the real command line: each attack is refused
//! as the one-line error a user sees, and nothing of the host comes out.

#[path = "hostile/harness.rs"]
mod harness;

#[path = "hostile/etc.rs"]
mod etc;
