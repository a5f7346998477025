//! The init's side of rootless operation ([`crate::userns::rootless`]):
//! PID 1 sealed, and the root built and entered inside the init's own
//! namespaces, with nothing mounted on the host.

use std::io;
use std::path::Path;

use crate::protocol::{InitConfig, RootlessLayer};
use crate::rootfs::StepError;

/// Init side, rootless, in PID 1 right after the fork: PID 1 is made
/// undumpable again, so no process of the sandbox (root of the same
/// namespace, with the same host uid) may open its memory through `/proc`;
/// only the outer stage, outside the sandbox's pid namespace, stays
/// dumpable for the host's file primitives.
pub fn seal_pid1() -> io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    Ok(())
}

/// Init side, rootless: becomes root of the namespace (staying dumpable,
/// so the user's own host-side file primitives may open its root),
/// makes new mount and cgroup namespaces, mounts the sandbox's tmpfs,
/// builds the root in it and enters it.
pub fn enter_root(cfg: &InitConfig, layer: &RootlessLayer) -> std::result::Result<(), StepError> {
    let step = |what: &str| {
        let what = what.to_string();
        move |error: io::Error| StepError { step: what, error }
    };
    become_root().map_err(step("becoming root of the user namespace"))?;
    let flags = rustix::thread::UnshareFlags::NEWNS | rustix::thread::UnshareFlags::NEWCGROUP;
    super::sys::unshare_namespaces(flags).map_err(step("unshare"))?;
    let root = Path::new(&cfg.root);
    let fs = root.parent().unwrap_or(root);
    crate::rootfs::mount_sandbox_tmpfs(fs, layer.disk_bytes)
        .map_err(step("mounting the sandbox's tmpfs"))?;
    crate::rootfs::make_skeleton(root, &cfg.host_dirs).map_err(step("building the root"))?;
    let bound: Vec<_> = cfg
        .host_dirs
        .iter()
        .filter(|d| !(layer.curated_etc && d.path == "/etc"))
        .cloned()
        .collect();
    if layer.curated_etc {
        crate::etc::make(root, &cfg.hostname)
            .map_err(|e| step("writing the curated /etc")(io::Error::other(e.to_string())))?;
    }
    rustix::process::chdir(root).map_err(|e| step("entering the root")(e.into()))?;
    crate::rootfs::enter_cwd(root, &bound)
}

/// Root of the user namespace: the caller's ids are mapped to 0 already,
/// so this only sets them and clears the supplementary groups where
/// `setgroups` is allowed (it is denied under a single-id map).
fn become_root() -> io::Result<()> {
    use rustix::process::{Gid, Uid};
    rustix::thread::set_thread_res_gid(Gid::ROOT, Gid::ROOT, Gid::ROOT)?;
    let _ = rustix::thread::set_thread_groups(&[]);
    rustix::thread::set_thread_res_uid(Uid::ROOT, Uid::ROOT, Uid::ROOT)?;
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable)?;
    Ok(())
}
