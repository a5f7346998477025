//! A host that does nothing but record: each call becomes a [`HostCall`],
//! in order, and one chosen step ([`HostStep`]) (or several) can be made to fail. Its
//! sandbox init follows an [`InitModel`], so that what teardown does to a
//! running, paused, hung or dead init can be told apart.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use corral_backend::{PlatformError, Result};

use super::{Host, Process};
use crate::state::State;

/// The host pid of the recorded sandbox's PID 1.
pub const INIT_PID: u32 = 4242;
/// When [`INIT_PID`] (and [`OUTER_PID`]) started, while alive.
pub const INIT_START: u64 = 7;
/// The host pid of its outer init (PID 1's parent).
pub const OUTER_PID: u32 = 4241;

/// One call made on a [`RecordingHost`], with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCall {
    /// [`Host::thaw_cgroup`] of this sandbox id.
    ThawCgroup(String),
    /// [`Host::remove_record`] of this path.
    RemoveRecord(PathBuf),
    /// [`Host::close_previews`] of this sandbox directory.
    ClosePreviews(PathBuf),
    /// [`Host::send_shutdown`] to this sandbox id.
    SendShutdown(String),
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
    /// [`Host::remove_cgroup`] of this sandbox id.
    RemoveCgroup(String),
    /// [`Host::unmount_all`] of this mount point.
    UnmountAll(PathBuf),
    /// [`Host::release_id_range`] of this sandbox id.
    ReleaseIdRange(String),
    /// [`Host::remove_sandbox_dir`] of this directory.
    RemoveSandboxDir(PathBuf),
    /// [`Host::release_key`] of this key, held by this sandbox id.
    ReleaseKey(String, String),
}

/// The steps of [`Host`] that can fail, hence be made to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStep {
    /// [`Host::close_previews`].
    ClosePreviews,
    /// [`Host::teardown_network`].
    TeardownNetwork,
    /// [`Host::remove_cgroup`].
    RemoveCgroup,
    /// [`Host::unmount_all`] (failing with `EBUSY`).
    UnmountAll,
    /// [`Host::remove_sandbox_dir`] (failing with `EBUSY`).
    RemoveSandboxDir,
}

impl HostStep {
    /// The message of the error this step fails with when made to.
    pub fn injected_message(self) -> String {
        self.injected().to_string()
    }

    /// The error this step fails with when made to.
    fn injected(self) -> PlatformError {
        PlatformError::Io {
            what: format!("{self:?}"),
            kind: std::io::ErrorKind::Other,
            detail: "made to fail".into(),
        }
    }
}

/// How the recorded sandbox's PID 1 behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitModel {
    /// Alive; exits on `Shutdown`.
    Running,
    /// Alive in a frozen cgroup: acts on `Shutdown` only once thawed.
    Paused,
    /// Alive; ignores `Shutdown` and dies only by `SIGKILL`.
    Hung,
    /// Gone: its control socket does not answer, its pid names nothing.
    Dead,
}

/// What the recorded init has been through.
#[derive(Debug)]
struct Recorded {
    calls: Vec<HostCall>,
    init: InitModel,
    shut_down: bool,
    killed: bool,
}

/// A [`Host`] that records every call and touches nothing.
#[derive(Debug)]
pub struct RecordingHost {
    recorded: Mutex<Recorded>,
    fail: Vec<HostStep>,
}

impl RecordingHost {
    /// A host whose sandbox init behaves as `init`; nothing fails.
    pub fn new(init: InitModel) -> Self {
        RecordingHost {
            recorded: Mutex::new(Recorded {
                calls: Vec::new(),
                init,
                shut_down: false,
                killed: false,
            }),
            fail: Vec::new(),
        }
    }

    /// The same host, on which `step` fails too.
    pub fn failing(mut self, step: HostStep) -> Self {
        self.fail.push(step);
        self
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<HostCall> {
        self.lock().calls.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, call: HostCall) {
        self.lock().calls.push(call);
    }

    /// Records `call` of `step`, then fails it when told to.
    fn step(&self, call: HostCall, step: HostStep) -> Result<()> {
        self.record(call);
        match self.fail.contains(&step) {
            true => Err(step.injected().into()),
            false => Ok(()),
        }
    }

    /// As [`Self::step`], failing with `EBUSY`.
    fn io_step(&self, call: HostCall, step: HostStep) -> std::io::Result<()> {
        self.record(call);
        match self.fail.contains(&step) {
            true => Err(std::io::Error::new(
                std::io::ErrorKind::ResourceBusy,
                step.injected_message(),
            )),
            false => Ok(()),
        }
    }

    fn known(&self, pid: u32) -> bool {
        (pid == INIT_PID || pid == OUTER_PID) && self.lock().init != InitModel::Dead
    }
}

impl Host for RecordingHost {
    fn thaw_cgroup(&self, _state: &State, id: &str) {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::ThawCgroup(id.to_string()));
        if recorded.init == InitModel::Paused {
            recorded.init = InitModel::Running;
        }
    }

    fn remove_record(&self, path: &Path) {
        self.record(HostCall::RemoveRecord(path.to_path_buf()));
    }

    fn close_previews(&self, dir: &Path) -> Result<()> {
        self.step(
            HostCall::ClosePreviews(dir.to_path_buf()),
            HostStep::ClosePreviews,
        )
    }

    fn send_shutdown(&self, _state: &State, id: &str) -> bool {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::SendShutdown(id.to_string()));
        match recorded.init {
            InitModel::Running => recorded.shut_down = true,
            InitModel::Paused | InitModel::Hung => {}
            InitModel::Dead => return false,
        }
        true
    }

    fn process_start(&self, pid: u32) -> Option<u64> {
        self.record(HostCall::ProcessStart(pid));
        self.known(pid).then_some(INIT_START)
    }

    fn open_process(&self, pid: u32, _start: Option<u64>) -> Option<Process> {
        self.record(HostCall::OpenProcess(pid));
        self.known(pid).then(|| Process::new(pid, None))
    }

    fn outer_init(&self, pid: u32) -> Option<u32> {
        self.record(HostCall::OuterInit(pid));
        (pid == INIT_PID && self.known(pid)).then_some(OUTER_PID)
    }

    fn wait_exit(&self, process: &Process, wait: Duration) -> bool {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::WaitExit(process.pid(), wait));
        recorded.shut_down || recorded.killed
    }

    fn kill(&self, process: &Process) {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::Kill(process.pid()));
        if process.pid() == INIT_PID {
            recorded.killed = true;
        }
    }

    fn teardown_network(&self, dir: &Path) -> Result<()> {
        self.step(
            HostCall::TeardownNetwork(dir.to_path_buf()),
            HostStep::TeardownNetwork,
        )
    }

    fn remove_cgroup(&self, _state: &State, id: &str) -> Result<()> {
        self.step(
            HostCall::RemoveCgroup(id.to_string()),
            HostStep::RemoveCgroup,
        )
    }

    fn unmount_all(&self, fs: &Path) -> std::io::Result<()> {
        self.io_step(HostCall::UnmountAll(fs.to_path_buf()), HostStep::UnmountAll)
    }

    fn release_id_range(&self, _ranges: &Path, id: &str) {
        self.record(HostCall::ReleaseIdRange(id.to_string()));
    }

    fn remove_sandbox_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.io_step(
            HostCall::RemoveSandboxDir(dir.to_path_buf()),
            HostStep::RemoveSandboxDir,
        )
    }

    fn release_key(&self, _state: &State, key: &str, id: &str) {
        self.record(HostCall::ReleaseKey(key.to_string(), id.to_string()));
    }
}
