//! The host side of a hostile workload (issue 12, items 16 and 17): what
//! the host reads of a sandbox, and snapshots of it, stay bounded.

#[path = "host_reads.rs"]
mod host_reads;
