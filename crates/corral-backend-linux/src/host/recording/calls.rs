//! What a [`super::RecordingHost`] records ([`HostCall`]) and what it can
//! be made to fail ([`HostStep`]).

use std::path::PathBuf;
use std::time::Duration;

use corral_backend::PlatformError;

use crate::cgroup::CgroupLimits;
#[cfg(doc)]
use crate::host::{Build, Host};
use crate::protocol::InitConfig;

/// One call made on a [`super::RecordingHost`], with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCall {
    /// [`Host::thaw_cgroup`] of this sandbox id.
    ThawCgroup(String),
    /// [`Host::remove_record`] of this path.
    RemoveRecord(PathBuf),
    /// [`Host::close_previews`] of this sandbox directory.
    ClosePreviews(PathBuf),
    /// [`Host::send_shutdown`] to the sandbox in this directory.
    SendShutdown(PathBuf),
    /// [`Host::process_start`] of this pid.
    ProcessStart(u32),
    /// [`Host::open_process`] of this pid.
    OpenProcess(u32),
    /// [`Host::outer_init`] of this pid.
    OuterInit(u32),
    /// [`Host::wait_exit`] of this pid, for this long.
    WaitExit(u32, Duration),
    /// [`Host::kill`] of this pid.
    Kill(u32),
    /// [`Host::teardown_network`] of this sandbox directory.
    TeardownNetwork(PathBuf),
    /// [`Host::empty_cgroup`] of this sandbox id.
    EmptyCgroup(String),
    /// [`Host::remove_cgroup`] of this sandbox id.
    RemoveCgroup(String),
    /// [`Host::unmount_all`] of this mount point.
    UnmountAll(PathBuf),
    /// [`Host::release_id_range`] of this sandbox id.
    ReleaseIdRange(String),
    /// [`Host::remove_sandbox_dir`] of this directory.
    RemoveSandboxDir(PathBuf),
    /// [`Host::move_to_reaping`] of this directory to this entry.
    MoveToReaping(PathBuf, PathBuf),
    /// [`Host::start_reaper`] of this entry.
    StartReaper(PathBuf),
    /// [`Host::lock_entry`] of this entry.
    LockEntry(PathBuf),
    /// [`Host::release_key`] of this claim file, held by this sandbox id.
    ReleaseKey(PathBuf, String),
    /// [`Host::init_processes`].
    InitProcesses,
    /// [`Host::preview_forwarders`].
    PreviewForwarders,
    /// [`Host::kill_all`] of these `(pid, start)`.
    KillAll(Vec<(u32, u64)>),
    /// [`Host::mount_points`].
    MountPoints,
    /// [`Host::cgroup_names`].
    CgroupNames,
    /// [`Host::empty_cgroup_age`] of this cgroup.
    EmptyCgroupAge(String),
    /// [`Host::sweep_tables`].
    SweepTables,
    /// [`Build::make_sandbox_dir`] of this directory.
    MakeSandboxDir(PathBuf),
    /// [`Build::make_mount_point`] of this mount point.
    MakeMountPoint(PathBuf),
    /// [`Build::mount_writable_layer`] at this mount point, of this size.
    MountWritableLayer(PathBuf, u64),
    /// [`Build::mount_image_overlay`] at this root, of these layers.
    MountImageOverlay(PathBuf, Vec<PathBuf>),
    /// [`Build::map_rootless_namespace`] of the init of this pid.
    MapRootlessNamespace(u32),
    /// [`Build::make_skeleton`] of this root, with these host directories.
    MakeSkeleton(PathBuf, Vec<String>),
    /// [`Build::restore_snapshot`] of this snapshot onto this root.
    RestoreSnapshot(String, PathBuf),
    /// [`Build::make_etc`] in this root, for this hostname.
    MakeEtc(PathBuf, String),
    /// [`Build::prepare_user_namespace`] around the init of this pid, with
    /// the id range of this index, for this root.
    PrepareUserNamespace(u32, u32, PathBuf),
    /// [`Build::bind_host_dirs`] onto this root, of these host directories.
    BindHostDirs(PathBuf, Vec<String>),
    /// [`Build::bind_volumes`] onto this root, at these sandbox paths.
    BindVolumes(PathBuf, Vec<String>),
    /// [`Build::bind_control`] in this sandbox directory, for the init of
    /// this pid.
    BindControl(PathBuf, u32),
    /// [`Build::set_cgroup_limits`] of this sandbox id to these limits.
    SetCgroupLimits(String, CgroupLimits),
    /// [`Build::start_init`] of the init of this pid, with this
    /// configuration.
    StartInit(u32, Box<InitConfig>),
    /// [`Build::apply_network`] of this sandbox directory, PID 1 this pid.
    ApplyNetwork(PathBuf, u32),
    /// [`Build::publish_previews`] of this sandbox directory, these ports.
    PublishPreviews(PathBuf, Vec<u16>),
    /// [`Build::write_record`] at this path.
    WriteRecord(PathBuf),
    /// [`Build::commit_init`] of the init of this pid.
    CommitInit(u32),
    /// [`Build::stop_init`] of the init of this pid.
    StopInit(u32),
}

impl HostCall {
    /// Whether the call changes the host (or would): everything but a
    /// look at it or a wait.
    pub fn is_effect(&self) -> bool {
        !matches!(
            self,
            HostCall::ProcessStart(_)
                | HostCall::OpenProcess(_)
                | HostCall::OuterInit(_)
                | HostCall::WaitExit(..)
                | HostCall::InitProcesses
                | HostCall::PreviewForwarders
                | HostCall::MountPoints
                | HostCall::CgroupNames
                | HostCall::EmptyCgroupAge(_)
                | HostCall::LockEntry(_)
        )
    }
}

/// The steps of [`Host`] and [`Build`] that can fail, hence be made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStep {
    /// [`Host::close_previews`].
    ClosePreviews,
    /// [`Host::teardown_network`].
    TeardownNetwork,
    /// [`Host::empty_cgroup`].
    EmptyCgroup,
    /// [`Host::remove_cgroup`].
    RemoveCgroup,
    /// [`Host::unmount_all`] (failing with `EBUSY`).
    UnmountAll,
    /// [`Host::remove_sandbox_dir`] (failing with `EBUSY`).
    RemoveSandboxDir,
    /// [`Host::move_to_reaping`] (failing with `EEXIST`: an entry of that
    /// name is left over).
    MoveToReaping,
    /// [`Host::start_reaper`] (no reaper starts).
    StartReaper,
    /// [`Host::process_start`] (finding nothing: the process is gone).
    ProcessStart,
    /// [`Build::make_sandbox_dir`].
    MakeSandboxDir,
    /// [`Build::make_mount_point`].
    MakeMountPoint,
    /// [`Build::mount_writable_layer`].
    MountWritableLayer,
    /// [`Build::mount_image_overlay`].
    MountImageOverlay,
    /// [`Build::map_rootless_namespace`].
    MapRootlessNamespace,
    /// [`Build::make_skeleton`].
    MakeSkeleton,
    /// [`Build::restore_snapshot`].
    RestoreSnapshot,
    /// [`Build::make_etc`].
    MakeEtc,
    /// [`Build::prepare_user_namespace`].
    PrepareUserNamespace,
    /// [`Build::bind_host_dirs`].
    BindHostDirs,
    /// [`Build::bind_volumes`].
    BindVolumes,
    /// [`Build::bind_control`].
    BindControl,
    /// [`Build::set_cgroup_limits`].
    SetCgroupLimits,
    /// [`Build::start_init`].
    StartInit,
    /// [`Build::apply_network`].
    ApplyNetwork,
    /// [`Build::publish_previews`].
    PublishPreviews,
    /// [`Build::write_record`].
    WriteRecord,
    /// [`Build::commit_init`].
    CommitInit,
}

impl HostStep {
    /// The message of the error this step fails with when made to.
    pub fn injected_message(self) -> String {
        self.injected().to_string()
    }

    /// The same, as an I/O error of `kind`.
    pub(super) fn injected_io(self, kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::new(kind, self.injected_message())
    }

    /// The error this step fails with when made to.
    pub(super) fn injected(self) -> PlatformError {
        PlatformError::Io {
            what: format!("{self:?}"),
            kind: std::io::ErrorKind::Other,
            detail: "made to fail".into(),
        }
    }
}
