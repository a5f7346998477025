//! # corral-backend-linux
//!
//! corral's own Linux sandbox: each sandbox is a tiny init of ours
//! (`corral-init`, PID 1 in new mount, pid, uts, ipc, net and cgroup
//! namespaces) on a root entered with `pivot_root` — a size-limited
//! writable layer ([`disk`]: ext4 in a loop-mounted image, else a tmpfs)
//! with the host's system directories bound read-only (the `host` image),
//! or an overlay of an imported image's layers with its upper dir on that
//! layer — in its own cgroup, with a reduced capability bounding set, under
//! a seccomp filter compiled once per host process.
//!
//! The core: [`LinuxBackend`] (the `Backend` trait), [`init`] (the init's
//! logic, run by the `corral-init` binary), [`protocol`] (what host and init
//! say to each other), [`rootfs`] (the mounts).
//!
//! Safe defaults when the caller asks for nothing: 1 GiB of memory without
//! swap, 512 processes, one CPU, a 1 GiB disk ([`DEFAULT_DISK_BYTES`]) and
//! a wall-clock limit of [`DEFAULT_EXEC_TIMEOUT`] (30 minutes) on every
//! exec without a `timeout` — change it with
//! [`LinuxBackend::with_default_exec_timeout`] or [`DEFAULT_TIMEOUT_ENV`];
//! a request's own `timeout` always wins. An out-of-memory kill is reported
//! as `ExitStatus::OomKilled`. Ports declared at create are reachable from
//! the host through [`preview`] URLs.

mod backend;
mod batch;
pub mod cgroup;
mod contained;
mod create;
mod destroy;
pub mod disk;
pub mod etc;
mod exec;
mod exec_run;
mod exec_timeout;
mod file_version;
mod files;
pub mod gc;
mod hooks;
mod host;
pub mod images;
pub mod init;
mod keys;
pub mod layers;
mod listing;
mod meta_cache;
pub mod network;
mod pause;
mod port;
pub mod preview;
mod process;
pub mod protocol;
mod rollback;
pub mod rootfs;
pub mod seccomp;
mod snapshot;
mod spawn;
mod state;
// One of the crate's only two modules allowed `unsafe` (the other is the
// init's `sys`): the host side's raw system calls.
#[allow(unsafe_code)]
mod sys;
mod terminal;
mod usage;
pub mod userns;

pub use backend::LinuxBackend;
pub use create::{DEFAULT_DISK_BYTES, HOST_IMAGE};
pub use exec_timeout::{DEFAULT_EXEC_TIMEOUT, DEFAULT_TIMEOUT_ENV, parse_default_timeout};
pub use state::SANDBOX_PREFIX;
