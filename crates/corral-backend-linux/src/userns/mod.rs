//! User namespaces: sandbox root is root of a user namespace of its own,
//! mapped to an unprivileged host id range of its own.
//!
//! - **Ranges** ([`ranges`]): [`RANGE_SIZE`] ids per sandbox, allocated
//!   from host id [`FIRST_HOST_ID`] (2^31, far above any real user or
//!   subordinate range a distribution hands out) upwards. A range is claimed
//!   with an `flock`ed file `<state>/linux/id-ranges/<index>`, whose lock
//!   the sandbox's outer init holds for the sandbox's whole life: when the
//!   sandbox ends (destroyed, crashed, killed) the lock is free and the
//!   range may be claimed again; `destroy` and `gc` remove free files.
//! - **Maps** ([`map`]): the init `unshare`s its user namespace first (every
//!   other namespace is made after it, so it owns them), tells the host, and
//!   the host (privileged in the parent namespace) writes `uid_map` and
//!   `gid_map`: sandbox id `n` is host id `start + n`. The init then becomes
//!   root of the namespace ([`become_root`]), so every sandbox process runs
//!   under the range's host ids, never host root.
//! - **Ownership** ([`ownership`]): the sandbox's writable root (its tmpfs)
//!   is owned by the range, so root inside can write it.
//! - **Host directories** ([`idmap`]): the `host` image's read-only binds are
//!   idmapped mounts through the sandbox's namespace where the kernel has
//!   them, so host root's files show as root inside; otherwise plain binds,
//!   whose files show as `nobody` but stay readable.

pub mod idmap;
pub mod map;
pub mod ownership;
pub mod ranges;
pub mod rootless;

pub use ranges::{IdRange, RangeClaim};

/// The first host id corral hands to sandboxes: 2^31.
pub const FIRST_HOST_ID: u32 = 1 << 31;

/// How many ids each sandbox's range has (sandbox ids `0..RANGE_SIZE`).
pub const RANGE_SIZE: u32 = 65536;

/// Init side, before making the user namespace: drops host root for host
/// id `host_id` (uid and gid; no supplementary groups), so the namespace
/// is owned by it and the kernel's per-user counts of everything inside
/// are charged to it.
pub fn drop_host_root(host_id: u32) -> std::io::Result<()> {
    use rustix::process::{Gid, Uid};
    let (uid, gid) = (Uid::from_raw(host_id), Gid::from_raw(host_id));
    rustix::thread::set_thread_groups(&[])?;
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    Ok(())
}

/// Init side, once the host wrote the maps: makes this process root of its
/// user namespace (group first, no supplementary groups, then user) — the
/// range's first host id, which it already runs as; this fails when the
/// maps are missing.
pub fn become_root() -> std::io::Result<()> {
    use rustix::process::{Gid, Uid};
    rustix::thread::set_thread_res_gid(Gid::ROOT, Gid::ROOT, Gid::ROOT)?;
    rustix::thread::set_thread_groups(&[])?;
    rustix::thread::set_thread_res_uid(Uid::ROOT, Uid::ROOT, Uid::ROOT)?;
    Ok(())
}
