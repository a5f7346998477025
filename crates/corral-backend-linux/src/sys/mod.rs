//! The host side's raw system calls: every `unsafe` block of the code the
//! host process runs (and the preview forwarder, which is a host process)
//! lives here, each behind a small safe function whose contract makes it
//! sound. The init's own raw calls are in `crate::init`'s `sys` module.
//!
//! - [`loop_device`]: `LOOP_CTL_GET_FREE` and `LOOP_CONFIGURE`.
//! - [`user_namespace`]: an idmapped `mount_setattr` and the rootless probe.
//! - [`before_exec`]: what a spawned helper does between `fork` and `exec`.
//! - [`inherited`]: adopting a descriptor placed by the parent process.

pub mod before_exec;
pub mod inherited;
pub mod loop_device;
pub mod user_namespace;
