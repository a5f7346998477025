//! The host side (issue 12, items 16 and 17): what `corral` itself spends
//! on a hostile sandbox or a flood of clients stays bounded.

#[path = "host_reads.rs"]
mod host_reads;
#[path = "serve_flood.rs"]
mod serve_flood;

pub use super::harness::{Cli, linux_available, text};
