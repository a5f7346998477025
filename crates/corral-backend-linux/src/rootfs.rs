//! The sandbox's root file system: the skeleton and the read-only binds the
//! host prepares on the sandbox's tmpfs, and the mounts `corral-init` makes
//! inside its new mount namespace before `pivot_root`.
//!
//! Construction for the `host` image (the cheapest correct one): the
//! sandbox's `/` is a directory on the per-sandbox tmpfs (size = the disk
//! limit). The host's `/usr` and library/binary directories are
//! bind-mounted read-only onto it **in the host's mount namespace**
//! ([`bind_host_dirs`]; non-recursively, so nothing mounted beneath them on
//! the host shows; private, so nothing mounted later propagates), and
//! symlinked top-level directories (`/bin -> usr/bin`) are recreated as the
//! same symlinks. `/etc` is the sandbox's own, made by [`crate::etc`] and
//! bound read-only the same way. The init's mount namespace is a copy of
//! the host's taken after that, so the commands and the host-side file
//! primitives see one tree. Everything else (`/workspace`, `/tmp`,
//! `/root`, `/home`, `/var`, `/run`) is a plain directory of the tmpfs —
//! writable and size-limited. `/dev` is a small tmpfs with bind mounts of
//! the host's `null zero full random urandom tty`, a new `devpts` instance
//! and a `shm` tmpfs; `/proc` is mounted by PID 1 for its own pid
//! namespace, with the kernel's sensitive files masked ([`MASKED`]).
//! Teardown detaches all of it before removing anything
//! ([`remove_unmounted`]).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use rustix::mount::{
    MountFlags, MountPropagationFlags, UnmountFlags, mount, mount_bind, mount_bind_recursive,
    mount_change, mount_remount, unmount,
};

use crate::protocol::HostDir;

/// Directories every sandbox root has, with their modes.
const SKELETON: &[(&str, u32)] = &[
    ("workspace", 0o755),
    ("tmp", 0o1777),
    ("root", 0o700),
    ("home", 0o755),
    ("var", 0o755),
    ("var/tmp", 0o1777),
    ("run", 0o755),
    ("proc", 0o555),
    ("dev", 0o755),
    ("mnt", 0o755),
];

/// Devices bound from the host into `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Host side: creates the skeleton of a sandbox root in `root` (on the
/// sandbox's tmpfs, or its overlay), including the mount points of
/// `host_dirs`. Directories an image already has are kept as they are.
pub fn make_skeleton(root: &Path, host_dirs: &[HostDir]) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o755).create(root) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    for (dir, mode) in SKELETON {
        let p = root.join(dir);
        match std::fs::DirBuilder::new().mode(*mode).create(&p) {
            // The umask may have narrowed the mode.
            Ok(()) => std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    for d in host_dirs {
        let name = d.path.trim_start_matches('/');
        let p = root.join(name);
        match &d.symlink {
            Some(target) => std::os::unix::fs::symlink(target, &p)?,
            None => std::fs::DirBuilder::new().mode(0o755).create(&p)?,
        }
    }
    Ok(())
}

/// A failed step of [`enter`]: what was done, and the OS error.
#[derive(Debug)]
pub struct StepError {
    /// The step.
    pub step: String,
    /// The error.
    pub error: io::Error,
}

fn step<T>(what: impl Into<String>, r: rustix::io::Result<T>) -> Result<T, StepError> {
    r.map_err(|e| StepError {
        step: what.into(),
        error: e.into(),
    })
}

fn step_io<T>(what: impl Into<String>, r: io::Result<T>) -> Result<T, StepError> {
    r.map_err(|error| StepError {
        step: what.into(),
        error,
    })
}

/// Init side, in a fresh mount namespace: makes every mount private, binds
/// the image into `root`, builds `/dev`, and pivots into `root`, detaching
/// the host's tree. Afterwards the process's `/` is the sandbox root.
pub fn enter(root: &Path, host_dirs: &[HostDir]) -> Result<(), StepError> {
    make_private()?;
    step(
        "binding the root onto itself",
        mount_bind_recursive(root, root),
    )?;
    step("entering the root", rustix::process::chdir(root))?;
    pivot(host_dirs)
}

/// [`enter`], for an init whose working directory is already `root` (one
/// in a user namespace, which may not search the state directory on the
/// way to `root`): only the last component of `root` is looked up again,
/// from its parent, to step onto the bind of the root made here.
pub fn enter_cwd(root: &Path, host_dirs: &[HostDir]) -> Result<(), StepError> {
    let Some(name) = root.file_name() else {
        return step_io(
            "entering the root",
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the root has no name",
            )),
        );
    };
    make_private()?;
    step(
        "binding the root onto itself",
        mount_bind_recursive(".", "."),
    )?;
    step(
        "entering the root",
        rustix::process::chdir(Path::new("..").join(name)),
    )?;
    // The kernel lets a user namespace mount a new `/proc` only where a
    // fully visible one is already mounted: the host's stands in until
    // PID 1 replaces it ([`mount_proc`]).
    step(
        "binding the host's /proc until PID 1 mounts its own",
        mount_bind_recursive("/proc", "proc"),
    )?;
    pivot(host_dirs)
}

fn make_private() -> Result<(), StepError> {
    step(
        "making mounts private",
        mount_change(
            "/",
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        ),
    )
}

/// With the bind of the root as the working directory: binds the image
/// into it, builds `/dev`, and pivots into it.
fn pivot(host_dirs: &[HostDir]) -> Result<(), StepError> {
    let here = Path::new(".");
    for d in host_dirs {
        if d.symlink.is_some() {
            continue;
        }
        let target = Path::new(d.path.trim_start_matches('/'));
        bind_host_dir(here, &d.path, target)?;
    }
    make_dev(Path::new("dev"))?;
    step("pivot_root", rustix::process::pivot_root(".", "."))?;
    step(
        "detaching the host's root",
        unmount(".", UnmountFlags::DETACH),
    )?;
    step("entering /", rustix::process::chdir("/"))?;
    Ok(())
}

/// Binds host directory `path` read-only onto `target` in `root`, unless
/// the host already bound it there (with a user namespace the host makes
/// these binds, idmapped where it can: [`crate::userns::idmap`]).
fn bind_host_dir(root: &Path, path: &str, target: &Path) -> Result<(), StepError> {
    let dev = |p: &Path| rustix::fs::stat(p).map(|st| st.st_dev);
    if step(format!("inspecting {path}"), dev(target))? != step("inspecting the root", dev(root))? {
        return Ok(());
    }
    step(format!("binding {path}"), mount_bind(path, target))?;
    step(
        format!("making {path} read-only"),
        mount_remount(
            target,
            MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
            "",
        ),
    )?;
    Ok(())
}

/// Builds `/dev` at `dev` (a directory of the root).
fn make_dev(dev: &Path) -> Result<(), StepError> {
    step(
        "mounting /dev",
        mount(
            "tmpfs",
            dev,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NOEXEC,
            Some(c"mode=755,size=65536"),
        ),
    )?;
    for name in DEVICES {
        let target = dev.join(name);
        step_io(
            format!("creating /dev/{name}"),
            std::fs::File::create(&target).map(drop),
        )?;
        step(
            format!("binding /dev/{name}"),
            mount_bind(Path::new("/dev").join(name), &target),
        )?;
    }
    let pts = dev.join("pts");
    step_io("creating /dev/pts", std::fs::create_dir(&pts))?;
    step(
        "mounting /dev/pts",
        mount(
            "devpts",
            &pts,
            "devpts",
            MountFlags::NOSUID | MountFlags::NOEXEC,
            Some(c"newinstance,ptmxmode=0666,mode=0620"),
        ),
    )?;
    let shm = dev.join("shm");
    step_io("creating /dev/shm", std::fs::create_dir(&shm))?;
    step(
        "mounting /dev/shm",
        mount(
            "shm",
            &shm,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(c"mode=1777,size=67108864"),
        ),
    )?;
    for (link, target) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        step_io(
            format!("linking /dev/{link}"),
            std::os::unix::fs::symlink(target, dev.join(link)),
        )?;
    }
    Ok(())
}

/// Parts of `/proc` made read-only (kernel tunables and triggers).
const PROC_READ_ONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];
/// Parts of `/proc` (and `/sys`, where mounted) masked: files behind
/// `/dev/null`, directories behind an empty read-only tmpfs. They show the
/// host's kernel memory, timers, devices, boot command line and
/// configuration. runc's default list, and `kallsyms`.
pub const MASKED: &[&str] = &[
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/cmdline",
    "/proc/slabinfo",
    "/proc/config.gz",
    "/proc/kallsyms",
    "/sys/firmware",
];

/// PID 1 side: mounts `/proc` for the new pid namespace, with the kernel's
/// tunables read-only and the paths of [`MASKED`] masked.
pub fn mount_proc() -> Result<(), StepError> {
    let dev = |p: &str| {
        step(
            format!("inspecting {p}"),
            rustix::fs::stat(p).map(|st| st.st_dev),
        )
    };
    if dev("/proc")? == dev("/")? {
        step("mounting /proc", mount_new_proc("/proc"))?;
    } else {
        replace_host_proc()?;
    }
    for name in PROC_READ_ONLY {
        let p = Path::new("/proc").join(name);
        if !p.exists() {
            continue;
        }
        step(format!("binding /proc/{name}"), mount_bind(&p, &p))?;
        step(
            format!("making /proc/{name} read-only"),
            mount_remount(
                &p,
                MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
                "",
            ),
        )?;
    }
    for path in MASKED {
        mask(Path::new(path))?;
    }
    Ok(())
}

fn mount_new_proc(at: &str) -> rustix::io::Result<()> {
    mount(
        "proc",
        at,
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
}

/// In a user namespace, where the host's `/proc` stands in at `/proc`
/// ([`enter_cwd`]): mounts the new one beside it, detaches the host's and
/// moves the new one in its place, so nothing of the host's is left
/// beneath.
fn replace_host_proc() -> Result<(), StepError> {
    const BESIDE: &str = "/dev/.proc";
    step_io("creating /dev/.proc", std::fs::create_dir(BESIDE))?;
    step("mounting /proc", mount_new_proc(BESIDE))?;
    step(
        "detaching the host's /proc",
        unmount("/proc", UnmountFlags::DETACH),
    )?;
    step(
        "moving /proc in place",
        rustix::mount::mount_move(BESIDE, "/proc"),
    )?;
    step_io("removing /dev/.proc", std::fs::remove_dir(BESIDE))
}

/// Masks `path` when it exists: a directory behind an empty read-only
/// tmpfs, anything else behind a read-only bind of `/dev/null`.
fn mask(path: &Path) -> Result<(), StepError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let shown = path.display();
    if meta.is_dir() {
        step(
            format!("masking {shown}"),
            mount(
                "tmpfs",
                path,
                "tmpfs",
                MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                Some(c"size=4096,mode=555"),
            ),
        )
    } else {
        step(format!("masking {shown}"), mount_bind("/dev/null", path))?;
        step(
            format!("making the mask of {shown} read-only"),
            // Not `nodev`: the mask is the null device, which reads empty.
            mount_remount(
                path,
                MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NOEXEC,
                "",
            ),
        )
    }
}

/// Host side: binds `source` read-only (and `nosuid`, `nodev`) at
/// `target` in the host's mount namespace, non-recursively (nothing
/// mounted beneath `source` shows) and private (nothing mounted later on
/// the host propagates into it). A sandbox's init copies it with its whole
/// root, so the host-side file primitives and the commands see one tree.
pub fn bind_read_only(source: &Path, target: &Path) -> io::Result<()> {
    mount_bind(source, target)?;
    mount_change(target, MountPropagationFlags::PRIVATE)?;
    mount_remount(
        target,
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        "",
    )?;
    Ok(())
}

/// Host side: binds the `host` image's directories `host_dirs` (symlinks
/// are skipped: [`make_skeleton`] recreated them) read-only onto their
/// mount points in `root`.
pub fn bind_host_dirs(root: &Path, host_dirs: &[HostDir]) -> Result<(), StepError> {
    for d in host_dirs.iter().filter(|d| d.symlink.is_none()) {
        let target = root.join(d.path.trim_start_matches('/'));
        step_io(
            format!("binding {} read-only", d.path),
            bind_read_only(Path::new(&d.path), &target),
        )?;
    }
    Ok(())
}

/// Host side: mounts the per-sandbox tmpfs of `size_bytes` at `dir`: the
/// writable layer where the ext4 one cannot be made ([`crate::disk`]).
pub fn mount_sandbox_tmpfs(dir: &Path, size_bytes: u64) -> io::Result<()> {
    let data =
        std::ffi::CString::new(format!("mode=755,size={size_bytes}")).map_err(io::Error::other)?;
    mount(
        "corral",
        dir,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(data.as_c_str()),
    )?;
    Ok(())
}

/// Host side: mounts the overlay of `layers` (topmost first) at `root`,
/// with `upper` and `work` on the sandbox's tmpfs. It is mounted in the
/// host's mount namespace, so the file primitives see the merged view.
pub fn mount_overlay(
    root: &Path,
    layers: &[std::path::PathBuf],
    upper: &Path,
    work: &Path,
) -> io::Result<()> {
    for d in [root, upper, work] {
        std::fs::DirBuilder::new().mode(0o755).create(d)?;
    }
    overlay(root, layers, upper, work)
}

/// Host side: mounts at `root` (which exists) the overlay of `layers`
/// (topmost first) with `upper` and `work`; a layer path that is empty or
/// holds a `,` or `:` (which would split the mount's options) is refused.
pub fn overlay(
    root: &Path,
    layers: &[std::path::PathBuf],
    upper: &Path,
    work: &Path,
) -> io::Result<()> {
    let list: Vec<String> = layers
        .iter()
        .map(|l| l.to_string_lossy().into_owned())
        .collect();
    if list.is_empty() || list.iter().any(|l| l.contains([',', ':'])) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "overlay layers must be non-empty paths without ',' or ':'",
        ));
    }
    let data = format!(
        "lowerdir={},upperdir={},workdir={}",
        list.join(":"),
        upper.display(),
        work.display()
    );
    let data = std::ffi::CString::new(data).map_err(io::Error::other)?;
    mount(
        "corral",
        root,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(data.as_c_str()),
    )?;
    Ok(())
}

/// Host side: detaches whatever is mounted at `dir` (and beneath it).
/// Nothing mounted there is not an error.
pub fn unmount_all(dir: &Path) -> io::Result<()> {
    loop {
        match unmount(dir, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            Ok(()) => continue,
            Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// The mount points at or below `dir` in this process's mount namespace,
/// deepest first.
pub fn mounts_below(dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let dir = std::fs::canonicalize(dir)?;
    let mut below: Vec<std::path::PathBuf> = mount_points()?
        .into_iter()
        .filter(|p| p.starts_with(&dir))
        .collect();
    below.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    below.dedup();
    Ok(below)
}

/// Every mount point of this process's mount namespace, in the order of
/// `/proc/self/mountinfo`.
pub fn mount_points() -> io::Result<Vec<std::path::PathBuf>> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    Ok(table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|escaped| std::path::PathBuf::from(unescape_mountinfo(escaped)))
        .collect())
}

/// A mount point as `/proc/self/mountinfo` writes it, with its octal
/// escapes (`\040` for a space, …) decoded.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Host side: removes the sandbox directory `dir` once nothing is mounted
/// at or below it. Whatever is still mounted there (a bind of the host's
/// `/usr` or `/etc` pieces, a tmpfs) is detached first, deepest first; if
/// anything remains mounted, nothing is removed and the error names it, so
/// a removal never runs through a bind into the host's own directories.
/// A missing `dir` is not an error.
pub fn remove_unmounted(dir: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    for point in mounts_below(dir)? {
        match unmount(&point, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW) {
            Ok(()) | Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(left) = mounts_below(dir)?.first() {
        return Err(io::Error::other(format!(
            "{} is still mounted; {} is left in place",
            left.display(),
            dir.display()
        )));
    }
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape_mountinfo(r"/a\040b\134c"), r"/a b\c");
        assert_eq!(unescape_mountinfo(r"/plain\x"), r"/plain\x");
        assert_eq!(unescape_mountinfo(r"/end\04"), r"/end\04");
        assert_eq!(unescape_mountinfo(r"/tab\011x\134"), "/tab\tx\\");
    }

    #[test]
    fn masked_paths_cover_the_usual_list() {
        for p in [
            "/proc/kcore",
            "/proc/cmdline",
            "/proc/scsi",
            "/sys/firmware",
        ] {
            assert!(MASKED.contains(&p), "{p}");
        }
    }
}
