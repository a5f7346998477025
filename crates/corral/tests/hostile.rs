//! Hostile workloads through the real command line: each row is an attack
//! and the refusal `corral` must answer with.

#[path = "hostile/network.rs"]
mod network;
