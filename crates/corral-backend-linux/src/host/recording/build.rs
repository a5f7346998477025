//! The build steps of a [`RecordingHost`]: each recorded, any made to fail.
//! The state directory's files are made for real (see the parent module);
//! mounts are listed; the init's go-ahead starts the model's PID 1
//! ([`INIT_PID`]) and its stop ends it.

use std::fs::File;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use corral_backend::snapshot_archive::Layout;
use corral_backend::{Network, Result};

use super::{HostCall, HostStep, INIT_PID, InitModel, RecordingHost};
use crate::binds::OpenBind;
use crate::cgroup::{CgroupLimits, Cgroups};
use crate::host::{Build, InitLink, WritableLayer};
use crate::protocol::{HostDir, InitConfig};
use crate::record::DiskLayer;

/// The paths of `dirs`, as recorded.
fn paths(dirs: &[HostDir]) -> Vec<String> {
    dirs.iter().map(|d| d.path.clone()).collect()
}

/// The mount points in `root` of the `host` image's `dirs` that are bound
/// (not symlinks).
fn bind_points(root: &Path, dirs: &[HostDir]) -> Vec<PathBuf> {
    dirs.iter()
        .filter(|d| d.symlink.is_none())
        .map(|d| root.join(d.path.trim_start_matches('/')))
        .collect()
}

impl Build for RecordingHost {
    fn make_sandbox_dir(&self, dir: &Path) -> io::Result<()> {
        self.build_step(
            HostCall::MakeSandboxDir(dir.to_path_buf()),
            HostStep::MakeSandboxDir,
        )?;
        std::fs::DirBuilder::new().mode(0o700).create(dir)
    }

    fn make_mount_point(&self, fs: &Path) -> io::Result<()> {
        self.build_step(
            HostCall::MakeMountPoint(fs.to_path_buf()),
            HostStep::MakeMountPoint,
        )?;
        std::fs::create_dir(fs)
    }

    fn mount_writable_layer(
        &self,
        _dir: &Path,
        fs: &Path,
        _templates: &Path,
        bytes: u64,
    ) -> io::Result<WritableLayer> {
        self.build_step(
            HostCall::MountWritableLayer(fs.to_path_buf(), bytes),
            HostStep::MountWritableLayer,
        )?;
        self.mounted(fs.to_path_buf());
        Ok(WritableLayer {
            layer: DiskLayer::Ext4,
            fallback: None,
        })
    }

    fn mount_image_overlay(
        &self,
        root: &Path,
        layers: &[PathBuf],
        _upper: &Path,
        _work: &Path,
    ) -> io::Result<()> {
        self.build_step(
            HostCall::MountImageOverlay(root.to_path_buf(), layers.to_vec()),
            HostStep::MountImageOverlay,
        )?;
        self.mounted(root.to_path_buf());
        Ok(())
    }

    fn map_rootless_namespace(&self, init: &mut InitLink) -> io::Result<()> {
        self.build_step(
            HostCall::MapRootlessNamespace(init.pid()),
            HostStep::MapRootlessNamespace,
        )
    }

    fn make_skeleton(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()> {
        self.build_step(
            HostCall::MakeSkeleton(root.to_path_buf(), paths(dirs)),
            HostStep::MakeSkeleton,
        )
    }

    fn restore_snapshot(
        &self,
        snapshot: &str,
        _archive: File,
        _layout: Layout,
        root: &Path,
    ) -> Result<()> {
        self.step(
            HostCall::RestoreSnapshot(snapshot.to_string(), root.to_path_buf()),
            HostStep::RestoreSnapshot,
        )
    }

    fn make_etc(&self, root: &Path, hostname: &str) -> io::Result<()> {
        self.build_step(
            HostCall::MakeEtc(root.to_path_buf(), hostname.to_string()),
            HostStep::MakeEtc,
        )?;
        self.mounted(root.join("etc"));
        Ok(())
    }

    fn prepare_user_namespace(
        &self,
        _id: &str,
        init: &mut InitLink,
        range: u32,
        root: &Path,
        layers: &[PathBuf],
        dirs: &[HostDir],
    ) -> Result<()> {
        self.step(
            HostCall::PrepareUserNamespace(init.pid(), range, root.to_path_buf()),
            HostStep::PrepareUserNamespace,
        )?;
        match layers.is_empty() {
            true => bind_points(root, dirs)
                .into_iter()
                .for_each(|m| self.mounted(m)),
            false => self.mounted(root.to_path_buf()),
        }
        Ok(())
    }

    fn bind_host_dirs(&self, root: &Path, dirs: &[HostDir]) -> io::Result<()> {
        self.build_step(
            HostCall::BindHostDirs(root.to_path_buf(), paths(dirs)),
            HostStep::BindHostDirs,
        )?;
        bind_points(root, dirs)
            .into_iter()
            .for_each(|m| self.mounted(m));
        Ok(())
    }

    fn bind_volumes(
        &self,
        root: &Path,
        binds: &[OpenBind],
        _init: Option<&InitLink>,
    ) -> io::Result<()> {
        let targets = binds.iter().map(|b| b.bind.target().to_string());
        self.build_step(
            HostCall::BindVolumes(root.to_path_buf(), targets.clone().collect()),
            HostStep::BindVolumes,
        )?;
        targets.for_each(|t| self.mounted(root.join(t.trim_start_matches('/'))));
        Ok(())
    }

    fn bind_control(&self, dir: &Path, init: &mut InitLink) -> io::Result<()> {
        self.build_step(
            HostCall::BindControl(dir.to_path_buf(), init.pid()),
            HostStep::BindControl,
        )
    }

    fn set_cgroup_limits(
        &self,
        _cgroups: Option<&Cgroups>,
        id: &str,
        limits: &CgroupLimits,
    ) -> io::Result<()> {
        self.build_step(
            HostCall::SetCgroupLimits(id.to_string(), *limits),
            HostStep::SetCgroupLimits,
        )
    }

    fn start_init(&self, init: &mut InitLink, config: &InitConfig) -> io::Result<u32> {
        self.build_step(
            HostCall::StartInit(init.pid(), Box::new(config.clone())),
            HostStep::StartInit,
        )?;
        self.set_init(InitModel::Running);
        Ok(INIT_PID)
    }

    fn apply_network(&self, dir: &Path, _id: &str, pid: u32, _network: &Network) -> Result<()> {
        self.step(
            HostCall::ApplyNetwork(dir.to_path_buf(), pid),
            HostStep::ApplyNetwork,
        )
    }

    fn publish_previews(&self, dir: &Path, _pid: u32, _start: u64, ports: &[u16]) -> Result<()> {
        self.step(
            HostCall::PublishPreviews(dir.to_path_buf(), ports.to_vec()),
            HostStep::PublishPreviews,
        )
    }

    fn write_record(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.build_step(
            HostCall::WriteRecord(path.to_path_buf()),
            HostStep::WriteRecord,
        )?;
        std::fs::write(path, bytes)
    }

    fn commit_init(&self, init: &mut InitLink) -> io::Result<()> {
        self.build_step(HostCall::CommitInit(init.pid()), HostStep::CommitInit)
    }

    /// Ends the model's PID 1 and drops the link: its startup socket
    /// closes, on which a stand-in init exits as the real one does.
    fn stop_init(&self, init: InitLink) {
        self.record(HostCall::StopInit(init.pid()));
        self.set_init(InitModel::Dead);
    }
}
