//! The host as it is: each effect of [`Host`] and [`Build`] done by the
//! code the crate has for it.

use std::fs::File;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use corral_backend::snapshot_archive::Layout;
use corral_backend::{Network, Result};

use crate::cgroup::{CgroupLimits, Cgroups};
use crate::host::{
    Build, EntryLock, Forwarder, Host, InitLink, InitProcess, Process, WritableLayer,
};
use crate::protocol::{self, HostDir, InitConfig, Request};
use crate::state::{connect_control_in, parent_pid, process_start};

/// How long a `Shutdown` frame may take to be written.
const SHUTDOWN_WRITE: Duration = Duration::from_millis(500);

/// The real host: mounts, cgroups, pidfds, the network.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHost;

impl Host for RealHost {
    fn thaw_cgroup(&self, cgroups: Option<&Cgroups>, id: &str) {
        if let Some(cgroups) = cgroups
            && let Ok(Some(cg)) = cgroups.open(id)
        {
            let _ = cg.thaw();
        }
    }

    fn remove_record(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
    }

    fn close_previews(&self, dir: &Path) -> Result<()> {
        crate::preview::teardown(dir)
    }

    fn send_shutdown(&self, dir: &Path) -> bool {
        let Ok(mut sock) = connect_control_in(dir) else {
            return false;
        };
        let _ = sock.set_write_timeout(Some(SHUTDOWN_WRITE));
        let _ = protocol::write_frame(&mut sock, &Request::Shutdown);
        true
    }

    fn process_start(&self, pid: u32) -> Option<u64> {
        process_start(pid)
    }

    fn open_process(&self, pid: u32, start: Option<u64>) -> Option<Process> {
        let p = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)?;
        // Opened first, then checked against the recorded start time: the
        // pidfd then names that process even if the pid were reused.
        let pidfd = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()?;
        if let Some(start) = start
            && process_start(pid) != Some(start)
        {
            return None;
        }
        Some(Process::new(pid, Some(pidfd)))
    }

    fn outer_init(&self, pid: u32) -> Option<u32> {
        let ppid = parent_pid(pid)?;
        let comm = std::fs::read(format!("/proc/{ppid}/comm")).ok()?;
        (comm.trim_ascii_end() == b"corral-init").then_some(ppid)
    }

    fn wait_exit(&self, process: &Process, wait: Duration) -> bool {
        process
            .pidfd()
            .is_some_and(|pidfd| exits_within(pidfd, wait))
    }

    fn kill(&self, process: &Process) {
        if let Some(pidfd) = process.pidfd() {
            let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
        }
    }

    fn teardown_network(&self, dir: &Path) -> Result<()> {
        crate::network::teardown(dir)
    }

    fn empty_cgroup(&self, cgroups: Option<&Cgroups>, id: &str) -> Result<()> {
        if let Some(cgroups) = cgroups
            && let Ok(Some(cg)) = cgroups.open(id)
        {
            cg.kill_all()
                .map_err(|e| e.failed(format_args!("emptying the cgroup of sandbox {id}")))?;
        }
        Ok(())
    }

    fn remove_cgroup(&self, cgroups: Option<&Cgroups>, id: &str) -> Result<()> {
        if let Some(cgroups) = cgroups
            && let Ok(Some(cg)) = cgroups.open(id)
        {
            cg.destroy()
                .map_err(|e| e.failed(format_args!("removing the cgroup of sandbox {id}")))?;
        }
        Ok(())
    }

    fn unmount_all(&self, fs: &Path) -> std::io::Result<()> {
        crate::rootfs::unmount_all(fs)
    }

    fn release_id_range(&self, ranges: &Path, id: &str) {
        crate::userns::ranges::release(ranges, id);
    }

    fn remove_sandbox_dir(&self, dir: &Path) -> std::io::Result<()> {
        crate::reaping::remove::remove_within_mount(dir)
    }

    fn move_to_reaping(&self, dir: &Path, entry: &Path) -> std::io::Result<()> {
        use rustix::fs::{CWD, RenameFlags};
        let rename = || rustix::fs::renameat_with(CWD, dir, CWD, entry, RenameFlags::NOREPLACE);
        match rename() {
            // `reaping/` itself was removed while the backend was open.
            Err(rustix::io::Errno::NOENT) if std::fs::symlink_metadata(dir).is_ok() => {
                if let Some(reaping) = entry.parent() {
                    std::fs::create_dir_all(reaping)?;
                }
                rename()?;
            }
            moved => moved?,
        }
        Ok(())
    }

    fn start_reaper(
        &self,
        entry: &Path,
        cgroups: Option<&Cgroups>,
        id: &str,
    ) -> std::io::Result<()> {
        let dirs = cgroups
            .and_then(|c| c.open(id).ok().flatten())
            .map(|cg| cg.dirs())
            .unwrap_or_default();
        crate::reaper::start(entry, &dirs)
    }

    fn lock_entry(&self, entry: &Path) -> std::io::Result<Option<EntryLock>> {
        use rustix::fs::{FlockOperation, Mode, OFlags};
        use rustix::io::Errno;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = match rustix::fs::open(entry, flags, Mode::empty()) {
            Ok(dir) => dir,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match rustix::fs::flock(&dir, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(EntryLock::new(Some(dir)))),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn release_key(&self, claim: &Path, id: &str) {
        crate::keys::release(claim, id);
    }

    fn init_processes(&self) -> Vec<InitProcess> {
        crate::hostproc::corral_inits()
    }

    fn preview_forwarders(&self) -> Vec<Forwarder> {
        crate::preview::forwarders()
    }

    fn kill_all(&self, procs: &[(u32, u64)], wait: Duration) -> usize {
        crate::hostproc::kill_all(procs, wait)
    }

    fn mount_points(&self) -> Vec<PathBuf> {
        crate::rootfs::mount_points().unwrap_or_default()
    }

    fn cgroup_names(&self, cgroups: Option<&Cgroups>) -> Vec<String> {
        cgroups
            .and_then(|cgroups| cgroups.list().ok())
            .unwrap_or_default()
    }

    fn empty_cgroup_age(&self, cgroups: Option<&Cgroups>, name: &str) -> Option<Duration> {
        let cg = cgroups?.open(name).ok()??;
        if !cg.pids().is_ok_and(|p| p.is_empty()) {
            return None;
        }
        std::fs::symlink_metadata(cg.dir())
            .ok()?
            .modified()
            .ok()?
            .elapsed()
            .ok()
    }

    fn sweep_tables(&self) -> Vec<String> {
        // Without `nft` no table was ever made: nothing to sweep.
        crate::network::sweep_tables().unwrap_or_default()
    }
}

impl Build for RealHost {
    fn make_sandbox_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::DirBuilder::new().mode(0o700).create(dir)
    }

    fn make_mount_point(&self, fs: &Path) -> io::Result<()> {
        std::fs::create_dir(fs)
    }

    fn mount_writable_layer(
        &self,
        dir: &Path,
        fs: &Path,
        templates: &Path,
        bytes: u64,
    ) -> io::Result<WritableLayer> {
        let mounted = crate::disk::mount_writable_layer(dir, fs, templates, bytes)?;
        Ok(WritableLayer {
            layer: mounted.layer,
            fallback: mounted.fallback.map(|why| why.to_string()),
        })
    }

    fn mount_image_overlay(
        &self,
        root: &Path,
        layers: &[PathBuf],
        upper: &Path,
        work: &Path,
    ) -> io::Result<()> {
        crate::rootfs::mount_overlay(root, layers, upper, work)
    }

    fn map_rootless_namespace(&self, init: &mut InitLink) -> io::Result<()> {
        crate::spawn::map_rootless_namespace(init)
    }

    fn make_skeleton(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()> {
        crate::rootfs::make_skeleton(root, dirs)
    }

    fn restore_snapshot(
        &self,
        snapshot: &str,
        archive: File,
        layout: Layout,
        root: &Path,
    ) -> Result<()> {
        crate::snapshot::apply(snapshot, archive, layout, root)
    }

    fn make_etc(&self, root: &Path, hostname: &str) -> io::Result<()> {
        crate::etc::make(root, hostname).map_err(|e| io::Error::other(e.to_string()))
    }

    fn prepare_user_namespace(
        &self,
        id: &str,
        init: &mut InitLink,
        range: u32,
        root: &Path,
        layers: &[PathBuf],
        dirs: &[HostDir],
    ) -> Result<()> {
        let range = crate::userns::IdRange::from_index(range).ok_or_else(|| {
            corral_backend::PlatformError::Defective {
                what: format!("sandbox {id}: id range {range} is past the last one"),
            }
        })?;
        crate::sandbox_userns::prepare(id, init, range, root, layers, dirs).map(|_| ())
    }

    fn bind_host_dirs(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()> {
        crate::rootfs::bind_host_dirs(root, dirs)
            .map_err(|e| io::Error::new(e.error.kind(), format!("{}: {}", e.step, e.error)))
    }

    fn bind_volumes(
        &self,
        root: &Path,
        binds: &[crate::binds::OpenBind],
        init: Option<&InitLink>,
    ) -> io::Result<()> {
        let userns = init
            .map(|i| std::fs::File::open(format!("/proc/{}/ns/user", i.pid())))
            .transpose()?;
        crate::binds::bind_all(root, binds, userns.as_ref())
    }

    fn bind_control(&self, dir: &Path, init: &mut InitLink) -> io::Result<()> {
        init.keep_control(crate::state::bind_control_in(dir)?);
        Ok(())
    }

    fn set_cgroup_limits(
        &self,
        cgroups: Option<&Cgroups>,
        id: &str,
        limits: &CgroupLimits,
    ) -> io::Result<()> {
        let cg = cgroups
            .map(|c| c.open(id))
            .transpose()
            .map_err(|e| io::Error::other(e.to_string()))?
            .flatten()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the cgroup is gone"))?;
        cg.set_limits(limits)
            .map_err(|e| io::Error::other(e.to_string()))
    }

    fn start_init(&self, init: &mut InitLink, config: &InitConfig) -> io::Result<u32> {
        let started = crate::spawn::go(init, config, crate::hooks::seccomp_program());
        // PID 1 holds its own copy of the listener (when it got one).
        init.close_control();
        started
    }

    fn apply_network(&self, dir: &Path, id: &str, pid: u32, network: &Network) -> Result<()> {
        crate::network::apply(dir, id, pid, network)
    }

    fn publish_previews(&self, dir: &Path, pid: u32, start: u64, ports: &[u16]) -> Result<()> {
        crate::preview::publish(dir, pid, start, ports)
    }

    fn write_record(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        // Not flushed to disk: the record describes processes and mounts
        // that do not outlive a reboot.
        corral_backend::statefile::write_atomic_unsynced(path, bytes)
    }

    fn commit_init(&self, init: &mut InitLink) -> io::Result<()> {
        crate::spawn::commit(init)
    }

    fn stop_init(&self, init: InitLink) {
        init.stop();
    }
}

/// Whether the process of `pidfd` exits within `wait`.
fn exits_within(pidfd: &std::os::fd::OwnedFd, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [rustix::event::PollFd::new(
            pidfd,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) if n > 0 => return true,
            Ok(_) => return false,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => continue,
            Err(_) => return false,
        }
    }
}
