//! Hostile workloads and hostile clients through the real `corral` binary:
//! each is contained, and the host stays bounded and answering.

#[path = "hostile/host.rs"]
mod host;
