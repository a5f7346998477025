//! The host effects of building a sandbox, behind [`Build`]: one method per
//! step of [`crate::create`], in the order it takes them — its directory
//! and mount point, its writable layer, its root (the image's overlay or
//! binds, its skeleton, its `/etc`, its user namespace), the host
//! directories bound into it (`binds`, only when asked for), its control
//! socket, its cgroup limits, the go-ahead to its init, its network, its
//! preview ports, its record and the commit of its init — and the stop of
//! an init whose create failed.
//!
//! A companion of [`super::Host`], which takes a sandbox down and looks at
//! the host: each trait reads in the order of the one operation it serves,
//! and stays small. Both are implemented by the same `RealHost` and the
//! same [`super::RecordingHost`], whose one record then holds a create's
//! build steps and its rollback's undo calls in the order they were made.
//!
//! Like [`super::Host`], it names ids, paths, pids, the cgroup hierarchy
//! and plain values (a configuration, limits, ports), and two handles that
//! no path can stand for: the link to a waiting init ([`InitLink`]), which
//! speaks to it over its startup socket alone, a verified snapshot
//! archive, read once, and the host directories of binds, held open since
//! the create was admitted ([`OpenBind`]).

use std::fs::File;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Child;

use corral_backend::snapshot_archive::Layout;
use corral_backend::{Network, Result};

use crate::binds::OpenBind;
use crate::cgroup::{CgroupLimits, Cgroups};
use crate::protocol::{HostDir, InitConfig};
use crate::record::DiskLayer;

/// One effect of building a sandbox per method, each named after what it
/// does, in the order [`crate::create`] makes them.
pub trait Build: Send + Sync + std::fmt::Debug {
    /// Makes the sandbox directory `dir` (mode 0700); fails when it exists.
    fn make_sandbox_dir(&self, dir: &Path) -> io::Result<()>;

    /// Makes `fs`, the writable layer's mount point in the sandbox
    /// directory.
    fn make_mount_point(&self, fs: &Path) -> io::Result<()>;

    /// Mounts the writable layer of the sandbox in `dir` at its mount point
    /// `fs`, `bytes` of disk: ext4 when it can be made (from the empty
    /// images kept in `templates`), else a tmpfs.
    fn mount_writable_layer(
        &self,
        dir: &Path,
        fs: &Path,
        templates: &Path,
        bytes: u64,
    ) -> io::Result<WritableLayer>;

    /// Mounts at `root` the overlay of an image's `layers` (topmost first),
    /// with its `upper` and `work` directories on the writable layer.
    fn mount_image_overlay(
        &self,
        root: &Path,
        layers: &[PathBuf],
        upper: &Path,
        work: &Path,
    ) -> io::Result<()>;

    /// Rootless: waits until `init` made its user namespace, then writes
    /// its id maps as this same user.
    fn map_rootless_namespace(&self, init: &mut InitLink) -> io::Result<()>;

    /// Makes the skeleton of the sandbox root `root` (its top-level
    /// directories, and the mount points and symlinks of the `host`
    /// image's `dirs`), keeping what an image already has.
    fn make_skeleton(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()>;

    /// Applies snapshot `snapshot` (its verified `archive`, holding a tree
    /// of `layout`) onto the fresh sandbox root `root`.
    fn restore_snapshot(
        &self,
        snapshot: &str,
        archive: File,
        layout: Layout,
        root: &Path,
    ) -> Result<()>;

    /// Writes the curated `/etc` of the sandbox named `hostname` into its
    /// root `root` and binds it read-only there.
    fn make_etc(&self, root: &Path, hostname: &str) -> io::Result<()>;

    /// With a user namespace, around the waiting `init` of sandbox `id`
    /// (id range `range`, by index): gives the root `root` to the range,
    /// maps the init's namespace, and mounts the image for it — the
    /// overlay of `layers` again on idmapped layers, or the `host` image's
    /// `dirs` as idmapped binds — then keeps the root in `init`, to hand
    /// it over with the go-ahead.
    fn prepare_user_namespace(
        &self,
        id: &str,
        init: &mut InitLink,
        range: u32,
        root: &Path,
        layers: &[PathBuf],
        dirs: &[HostDir],
    ) -> Result<()>;

    /// Binds the `host` image's `dirs` read-only onto their mount points in
    /// `root` (symlinks are the skeleton's).
    fn bind_host_dirs(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()>;

    /// Binds the host directories of `binds` (each held open since the
    /// create was admitted) onto their targets in `root`, made inside it
    /// where missing; with a user namespace, read-only ones idmapped
    /// through the namespace of `init` where the kernel can.
    fn bind_volumes(
        &self,
        root: &Path,
        binds: &[OpenBind],
        init: Option<&InitLink>,
    ) -> io::Result<()>;

    /// Binds PID 1's control socket in the sandbox directory `dir` and
    /// keeps it in `init`, to hand over with the go-ahead.
    fn bind_control(&self, dir: &Path, init: &mut InitLink) -> io::Result<()>;

    /// Replaces the limits the cgroup of sandbox `id` was made with by
    /// `limits`.
    fn set_cgroup_limits(
        &self,
        cgroups: Option<&Cgroups>,
        id: &str,
        limits: &CgroupLimits,
    ) -> io::Result<()>;

    /// Gives `init` its go-ahead — `config`, the seccomp program and what
    /// it keeps to hand over — and waits until PID 1 runs; PID 1's host
    /// pid.
    fn start_init(&self, init: &mut InitLink, config: &InitConfig) -> io::Result<u32>;

    /// Gives the sandbox `id` in `dir` (PID 1 `pid`) the `network` its
    /// request asks for.
    fn apply_network(&self, dir: &Path, id: &str, pid: u32, network: &Network) -> Result<()>;

    /// Publishes `ports` of the sandbox in `dir` (PID 1 `pid`, started at
    /// `start`) on the host.
    fn publish_previews(&self, dir: &Path, pid: u32, start: u64, ports: &[u16]) -> Result<()>;

    /// Writes the sandbox's record `bytes` at `path` (from then on it is
    /// listed).
    fn write_record(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;

    /// Tells `init` its record is written: from then on the sandbox
    /// outlives this process.
    fn commit_init(&self, init: &mut InitLink) -> io::Result<()>;

    /// Stops `init` (a create failed): closes its startup socket, kills it
    /// and reaps it, so that nothing of the sandbox runs while its pieces
    /// are removed.
    fn stop_init(&self, init: InitLink);
}

/// The writable layer a sandbox got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableLayer {
    /// Its file system.
    pub layer: DiskLayer,
    /// Why it is not ext4, when it is not.
    pub fallback: Option<String>,
}

/// The link to a started init, from its start until its commit: the init
/// (the outer `corral-init`, a child of this process), the startup socket
/// to it, and what it is handed with its go-ahead. Dropping it closes the
/// startup socket, on which the init exits by itself.
#[derive(Debug)]
pub struct InitLink {
    child: Child,
    startup: UnixStream,
    control: Option<UnixListener>,
    root: Option<File>,
}

impl InitLink {
    /// The link to `child`, spoken to over `startup`.
    pub fn new(child: Child, startup: UnixStream) -> Self {
        InitLink {
            child,
            startup,
            control: None,
            root: None,
        }
    }

    /// The init's host pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The startup socket.
    pub fn startup(&self) -> &UnixStream {
        &self.startup
    }

    /// Whether the init still waits (it has not exited).
    pub fn waiting(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Keeps PID 1's control `listener`, to hand over with the go-ahead.
    pub fn keep_control(&mut self, listener: UnixListener) {
        self.control = Some(listener);
    }

    /// Keeps the sandbox's `root` directory (as finally mounted), to hand
    /// over with the go-ahead (with a user namespace, the init cannot
    /// reach it through the state directory).
    pub fn keep_root(&mut self, root: File) {
        self.root = Some(root);
    }

    /// What is kept to hand over: the control listener and the root.
    pub fn kept(&self) -> (Option<&UnixListener>, Option<&File>) {
        (self.control.as_ref(), self.root.as_ref())
    }

    /// Closes the control listener once handed over (PID 1 holds its own
    /// copy).
    pub fn close_control(&mut self) {
        self.control = None;
    }

    /// Stops the init: closes its startup socket, kills it and reaps it.
    pub fn stop(self) {
        let (mut child, startup) = self.into_parts();
        drop(startup);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The init and its startup socket, for a reaper that keeps the socket
    /// open until the init exits.
    pub fn into_parts(self) -> (Child, UnixStream) {
        (self.child, self.startup)
    }
}
