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
//!
//! # Layering
//!
//! Modules depend downwards only: a lower one never names a higher one
//! (within a module, its `mod.rs` and its files may name each other).
//! Bottom to top:
//!
//! 1. **Leaves**, which name no other module of the crate: the raw system
//!    calls (`sys`), what host and init say ([`protocol`]), the record of
//!    a sandbox and its names (`record`), whether the backend runs
//!    rootless (`privilege`), the host's processes (`hostproc`), path
//!    resolution beneath a root (`beneath`), the blocking-task helper
//!    (`blocking`), a spawned process's pipes on the runtime's reactor
//!    (`pipes`), [`cgroup`], [`layers`].
//! 2. **The host seam** (`host`: the `Host` and `Build` traits, over ids,
//!    paths, the cgroup hierarchy and the link to a waiting init), the
//!    image store ([`images`]), the mounts ([`rootfs`]), the binds of host
//!    directories a request asks for (`binds`), the record cache, the
//!    control connection's frames read on the runtime's reactor
//!    (`control_reader`, over [`protocol`]).
//! 3. **The state directory** (`state`, which holds its `Host`), and the
//!    curated `/etc` ([`etc`]).
//! 4. **The pieces of a sandbox**, each over the state directory: [`disk`],
//!    key claims, [`network`], pause, snapshots, usage, exec, [`userns`]
//!    (ranges, maps, ownership, the host's side of rootless).
//! 5. **Teardown** (`destroy`, and `reaping`: what of it comes after its
//!    answer), starting an init (`spawn`), the file primitives.
//! 6. **The init** ([`init`]: PID 1, its raw calls, the init's side of
//!    rootless, what PID 1 puts on itself once for every process to
//!    inherit: the seccomp install, the bounding set, the signals),
//!    [`preview`], a sandbox's user
//!    namespace set up around its init (`sandbox_userns`), create's
//!    rollback.
//! 7. **Reclaim** ([`gc`]), `real_host` (the real `Host`, which calls the
//!    modules owning each effect), the reaper process (`reaper`), the
//!    filter ([`seccomp`]) and the hooks that apply it.
//! 8. **Create**, then **the backend** (`backend`, [`LinuxBackend`]), the
//!    only place the real host is chosen.

mod backend;
mod batch;
mod beneath;
mod binds;
mod blocking;
pub mod cgroup;
mod contained;
mod control_reader;
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
mod hostproc;
pub mod images;
pub mod init;
mod keys;
pub mod layers;
mod listing;
mod meta_cache;
pub mod network;
mod pause;
mod pipes;
mod port;
pub mod preview;
mod privilege;
mod process;
pub mod protocol;
mod real_host;
mod reaper;
mod reaping;
mod record;
mod rollback;
pub mod rootfs;
mod sandbox_user;
mod sandbox_userns;
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
pub use reaper::reaper_main;
pub use state::SANDBOX_PREFIX;
