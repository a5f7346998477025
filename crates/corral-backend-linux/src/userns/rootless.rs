//! Rootless operation: the linux backend run by an ordinary user, on a host
//! that lets such a user make a user namespace.
//!
//! Only when the backend's effective uid is not 0 ([`active`]); the root
//! path never reaches this module.
//!
//! - **The namespace**: the outer init `unshare`s its user namespace as
//!   the caller (there is no host root to drop) and the host — the same
//!   user — writes its maps ([`write_maps`]): with `newuidmap`/`newgidmap`
//!   and the user's `/etc/subuid` + `/etc/subgid` range for sandbox ids
//!   `1..=65535` where they are installed and configured, else the single
//!   map `0 <uid> 1` (after `setgroups` `deny`, for the gid map).
//! - **The root**: nothing is mounted on the host. The init mounts the
//!   sandbox's tmpfs (of the disk limit's size) on `fs/` inside its own
//!   mount namespace, builds the skeleton and the curated `/etc` in it, and
//!   binds the `host` image's directories read-only there
//!   (`crate::init`'s `rootless::enter_root`).
//! - **Host-side files**: the host reaches that tmpfs through the outer
//!   init's root, `/proc/<outer init>/root` ([`files_root`]; the outer init
//!   is PID 1's parent, pivoted into the same root): the process is the
//!   user's own, dumpable for it, outside the sandbox's pid namespace;
//!   PID 1 is made undumpable (`seal_pid1`, beside it). Every path is still
//!   resolved inside that root.
//! - **Refused**: what needs privileges a user cannot get is refused with
//!   `unsupported` ([`refuse`]): cgroup limits, an allowlist network (a
//!   veth and nf_tables in the host's namespace), previews (the forwarder
//!   enters the sandbox's network namespace), layered images (their
//!   overlay is mounted by the host) and snapshots.

use std::io;
use std::path::PathBuf;
use std::process::Command;

use corral_backend::{BackendError, CreateRequest, Result};

use crate::images::{Image, ImageRoot};
use crate::state::State;

/// How many ids a subordinate range gives the sandbox (ids `1..=65535`).
const SUBORDINATE_IDS: u64 = 65535;

/// Whether this process runs the backend rootless (its effective uid is
/// not 0).
pub use crate::privilege::rootless as active;

/// Whether an ordinary user may make a user namespace here: tried once in
/// a forked child. The error is one line.
pub fn probe() -> std::result::Result<(), String> {
    match crate::sys::user_namespace::probe_user_namespace() {
        Ok(true) => Ok(()),
        Ok(false) => Err(
            "the linux backend needs root here: this host does not let an \
                          ordinary user make a user namespace"
                .into(),
        ),
        Err(e) => Err(format!(
            "the linux backend needs root here: probing for user namespaces failed: {e}"
        )),
    }
}

/// The refusal of `what`, which needs root.
fn no(what: &str) -> Result<()> {
    Err(BackendError::unsupported(
        crate::state::NAME,
        format_args!("do this rootless: {what} needs root"),
    ))
}

/// Refuses, with `unsupported`, a limit only a cgroup enforces: an
/// ordinary user can neither make nor be delegated one here.
pub fn refuse_limits(req: &CreateRequest) -> Result<()> {
    if req.size.memory_bytes.is_some() {
        return no("a memory limit (size.memory_bytes)");
    }
    if req.size.cpus.is_some() {
        return no("a CPU limit (size.cpus)");
    }
    if req.limits.pids.is_some() {
        return no("a process limit (limits.pids)");
    }
    Ok(())
}

/// Refuses, with `unsupported`, what else a rootless sandbox cannot hold.
pub fn refuse(req: &CreateRequest, image: &Image) -> Result<()> {
    if matches!(image.root, ImageRoot::Layers(_)) {
        return no(&format!("image {:?} (an overlay of layers)", image.name));
    }
    if req.snapshot.is_some() {
        return no("restoring a snapshot");
    }
    if !req.ports.is_empty() {
        return no("publishing ports");
    }
    if matches!(req.network, corral_backend::Network::Allowlist { .. }) {
        return no("an allowlist network");
    }
    Ok(())
}

/// Host side: writes the id maps of the user namespace of process `pid`
/// (made by that process, as this user).
pub fn write_maps(pid: u32) -> io::Result<()> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let user = user_name(uid);
    let sub_uid = user
        .as_deref()
        .and_then(|u| subordinate("/etc/subuid", u, uid));
    let sub_gid = user
        .as_deref()
        .and_then(|u| subordinate("/etc/subgid", u, uid));
    if let (Some(su), Some(sg)) = (sub_uid, sub_gid)
        && helper_map("newuidmap", pid, uid, su)
    {
        if helper_map("newgidmap", pid, gid, sg) {
            return Ok(());
        }
        return write_single_gid(pid, gid);
    }
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("0 {uid} 1\n"))?;
    write_single_gid(pid, gid)
}

fn write_single_gid(pid: u32, gid: u32) -> io::Result<()> {
    std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("0 {gid} 1\n"))
}

/// Runs `tool` (`newuidmap` or `newgidmap`) for `pid`: sandbox id 0 is
/// `own`, ids `1..` the subordinate range starting at `sub`. `false` when
/// the tool is missing or refused.
fn helper_map(tool: &str, pid: u32, own: u32, sub: u32) -> bool {
    Command::new(tool)
        .args([
            pid.to_string(),
            "0".into(),
            own.to_string(),
            "1".into(),
            "1".into(),
            sub.to_string(),
            SUBORDINATE_IDS.to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The login name of `uid`, from `/etc/passwd`.
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        (f.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
    })
}

/// The start of `user`'s (or `uid`'s) subordinate range in `file`, when
/// it has at least [`SUBORDINATE_IDS`] ids.
fn subordinate(file: &str, user: &str, uid: u32) -> Option<u32> {
    parse_subordinate(&std::fs::read_to_string(file).ok()?, user, uid)
}

fn parse_subordinate(text: &str, user: &str, uid: u32) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut f = l.trim().split(':');
        let who = f.next()?;
        let start: u32 = f.next()?.parse().ok()?;
        let count: u64 = f.next()?.parse().ok()?;
        let ours = who == user || who.parse::<u32>().ok() == Some(uid);
        (ours && count >= SUBORDINATE_IDS).then_some(start)
    })
}

/// Host side: the directory the file primitives open as sandbox `id`'s
/// root: its tmpfs, reached through PID 1's parent (the outer init) when
/// rootless.
pub fn files_root(state: &State, id: &str) -> PathBuf {
    if !state.rootless {
        return state.root_dir(id);
    }
    let outer = crate::state::read_meta(state, id)
        .ok()
        .flatten()
        .and_then(|meta| crate::state::parent_pid(meta.init_pid));
    match outer {
        Some(pid) => PathBuf::from(format!("/proc/{pid}/root")),
        None => state.root_dir(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subordinate_ranges_are_found_by_name_or_uid_and_must_be_large_enough() {
        let text = "alice:100000:65536\n1001:200000:65536\nbob:300000:10\n";
        assert_eq!(parse_subordinate(text, "alice", 1000), Some(100000));
        assert_eq!(parse_subordinate(text, "carol", 1001), Some(200000));
        assert_eq!(parse_subordinate(text, "bob", 1002), None);
        assert_eq!(parse_subordinate("garbage\n", "alice", 1000), None);
    }
}
