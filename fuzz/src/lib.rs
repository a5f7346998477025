//! What corral's fuzz targets share: a file tree laid out beneath a root
//! from a fuzzer-chosen script ([`layout`]) and a record of a host tree, to
//! prove that nothing outside a root changed ([`host_tree`]).
//!
//! The targets themselves are `fuzz_targets/*.rs`, one per decoder or
//! resolver; `fuzz/README.md` says how to run them.

pub mod host_tree;
pub mod layout;
