//! A host that records: each call becomes a [`HostCall`], in order, and
//! one chosen step ([`HostStep`]) (or several) can be made to fail. Its
//! sandbox init follows an [`InitModel`], so that what teardown does to a
//! running, paused, hung or dead init can be told apart; the go-ahead of
//! a create brings it to life (as [`INIT_PID`]), its stop ends it.
//!
//! It touches nothing of the host but the state directory, which tests
//! keep in a temporary directory: the sandbox directory, its mount point
//! and its record, which a create makes through [`super::Build`] and a
//! teardown or gc pass reads back, are made there for real (the state
//! directory's other files, the creator mark and the key claims, are
//! written by the code that owns them, whatever the host). Removals are
//! recorded only, so that what a teardown or a pass removes is told by
//! its calls alone. Mounts are modelled: what a create mounts is listed
//! ([`RecordingHost::mounts`]) until an unmount takes it away.

mod build;
mod calls;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use corral_backend::Result;

pub use calls::{HostCall, HostStep};

use super::{EntryLock, Forwarder, Host, InitProcess, Process};
use crate::cgroup::Cgroups;

/// The host pid of the recorded sandbox's PID 1.
pub const INIT_PID: u32 = 4242;
/// When [`INIT_PID`] (and [`OUTER_PID`]) started, while alive.
pub const INIT_START: u64 = 7;
/// The host pid of its outer init (PID 1's parent).
pub const OUTER_PID: u32 = 4241;

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

/// What the recorded init has been through, and what else is on the
/// recorded host (each removed by the call that would remove it).
#[derive(Debug)]
struct Recorded {
    calls: Vec<HostCall>,
    init: InitModel,
    shut_down: bool,
    killed: bool,
    inits: Vec<InitProcess>,
    forwarders: Vec<Forwarder>,
    mounts: Vec<PathBuf>,
    cgroups: Vec<(String, Option<Duration>)>,
    tables: Vec<String>,
    held: Vec<PathBuf>,
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
                inits: Vec::new(),
                forwarders: Vec::new(),
                mounts: Vec::new(),
                cgroups: Vec::new(),
                tables: Vec::new(),
                held: Vec::new(),
            }),
            fail: Vec::new(),
        }
    }

    /// The same host, on which `step` fails too.
    pub fn failing(mut self, step: HostStep) -> Self {
        self.fail.push(step);
        self
    }

    /// From now on, these `corral-init` processes run on the host.
    pub fn set_inits(&self, inits: Vec<InitProcess>) {
        self.lock().inits = inits;
    }

    /// From now on, these preview forwarders run on the host.
    pub fn set_forwarders(&self, forwarders: Vec<Forwarder>) {
        self.lock().forwarders = forwarders;
    }

    /// From now on, these are the host's mount points.
    pub fn set_mounts(&self, mounts: Vec<PathBuf>) {
        self.lock().mounts = mounts;
    }

    /// From now on, these are the host's cgroups: each name with how long
    /// ago it last changed while empty (`None`: it holds a process).
    pub fn set_cgroups(&self, cgroups: Vec<(String, Option<Duration>)>) {
        self.lock().cgroups = cgroups;
    }

    /// From now on, the host keeps leftover firewall tables of these links.
    pub fn set_tables(&self, links: Vec<String>) {
        self.lock().tables = links;
    }

    /// From now on, these entries of `reaping/` are held by a live reaper:
    /// [`Host::lock_entry`] of each finds it held.
    pub fn set_held_entries(&self, entries: Vec<PathBuf>) {
        self.lock().held = entries;
    }

    /// The host's mount points now.
    pub fn mounts(&self) -> Vec<PathBuf> {
        self.lock().mounts.clone()
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<HostCall> {
        self.lock().calls.clone()
    }

    /// The calls made so far that change the host ([`HostCall::is_effect`]).
    pub fn effects(&self) -> Vec<HostCall> {
        self.calls()
            .into_iter()
            .filter(HostCall::is_effect)
            .collect()
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
            true => Err(step.injected_io(std::io::ErrorKind::ResourceBusy)),
            false => Ok(()),
        }
    }

    /// As [`Self::step`], failing with an I/O error of its own.
    fn build_step(&self, call: HostCall, step: HostStep) -> std::io::Result<()> {
        self.record(call);
        match self.fail.contains(&step) {
            true => Err(step.injected_io(std::io::ErrorKind::Other)),
            false => Ok(()),
        }
    }

    /// From now on, `mount` is mounted.
    fn mounted(&self, mount: PathBuf) {
        self.lock().mounts.push(mount);
    }

    /// From now on, the sandbox's PID 1 behaves as `init`.
    fn set_init(&self, init: InitModel) {
        self.lock().init = init;
    }

    fn known(&self, pid: u32) -> bool {
        (pid == INIT_PID || pid == OUTER_PID) && self.lock().init != InitModel::Dead
    }
}

impl Host for RecordingHost {
    fn thaw_cgroup(&self, _cgroups: Option<&Cgroups>, id: &str) {
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
        )?;
        self.lock().forwarders.retain(|f| f.dir != dir);
        Ok(())
    }

    fn send_shutdown(&self, dir: &Path) -> bool {
        let mut recorded = self.lock();
        recorded
            .calls
            .push(HostCall::SendShutdown(dir.to_path_buf()));
        match recorded.init {
            InitModel::Running => recorded.shut_down = true,
            InitModel::Paused | InitModel::Hung => {}
            InitModel::Dead => return false,
        }
        true
    }

    fn process_start(&self, pid: u32) -> Option<u64> {
        self.record(HostCall::ProcessStart(pid));
        let vanished = self.fail.contains(&HostStep::ProcessStart);
        (self.known(pid) && !vanished).then_some(INIT_START)
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

    fn empty_cgroup(&self, _cgroups: Option<&Cgroups>, id: &str) -> Result<()> {
        self.step(HostCall::EmptyCgroup(id.to_string()), HostStep::EmptyCgroup)
    }

    fn remove_cgroup(&self, _cgroups: Option<&Cgroups>, id: &str) -> Result<()> {
        self.step(
            HostCall::RemoveCgroup(id.to_string()),
            HostStep::RemoveCgroup,
        )?;
        self.lock().cgroups.retain(|(name, _)| name != id);
        Ok(())
    }

    fn unmount_all(&self, fs: &Path) -> std::io::Result<()> {
        self.io_step(HostCall::UnmountAll(fs.to_path_buf()), HostStep::UnmountAll)?;
        self.lock().mounts.retain(|m| !m.starts_with(fs));
        Ok(())
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

    fn move_to_reaping(&self, dir: &Path, entry: &Path) -> std::io::Result<()> {
        self.record(HostCall::MoveToReaping(
            dir.to_path_buf(),
            entry.to_path_buf(),
        ));
        match self.fail.contains(&HostStep::MoveToReaping) {
            true => Err(HostStep::MoveToReaping.injected_io(std::io::ErrorKind::AlreadyExists)),
            false => Ok(()),
        }
    }

    fn start_reaper(
        &self,
        entry: &Path,
        _cgroups: Option<&Cgroups>,
        _id: &str,
    ) -> std::io::Result<()> {
        self.build_step(
            HostCall::StartReaper(entry.to_path_buf()),
            HostStep::StartReaper,
        )
    }

    /// Held when listed by [`RecordingHost::set_held_entries`] or when the
    /// entry's directory is not there.
    fn lock_entry(&self, entry: &Path) -> std::io::Result<Option<EntryLock>> {
        let mut recorded = self.lock();
        recorded
            .calls
            .push(HostCall::LockEntry(entry.to_path_buf()));
        let free = entry.is_dir() && !recorded.held.iter().any(|h| h == entry);
        Ok(free.then(|| EntryLock::new(None)))
    }

    fn release_key(&self, claim: &Path, id: &str) {
        self.record(HostCall::ReleaseKey(claim.to_path_buf(), id.to_string()));
    }

    fn init_processes(&self) -> Vec<InitProcess> {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::InitProcesses);
        recorded.inits.clone()
    }

    fn preview_forwarders(&self) -> Vec<Forwarder> {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::PreviewForwarders);
        recorded.forwarders.clone()
    }

    /// Kills what runs with that pid and start time: a listed init or
    /// forwarder, or the sandbox's PID 1 — which, frozen, survives (as a
    /// frozen process does until thawed).
    fn kill_all(&self, procs: &[(u32, u64)], _wait: Duration) -> usize {
        let init_alive = self.known(INIT_PID);
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::KillAll(procs.to_vec()));
        let mut signalled = 0;
        for &(pid, start) in procs {
            let listed = recorded
                .inits
                .iter()
                .any(|p| (p.pid, p.start) == (pid, start))
                || recorded
                    .forwarders
                    .iter()
                    .any(|f| (f.pid, f.start) == (pid, start));
            let init = (pid, start) == (INIT_PID, INIT_START) && init_alive;
            if !(listed || init) {
                continue;
            }
            signalled += 1;
            if pid == INIT_PID && recorded.init == InitModel::Paused {
                continue;
            }
            recorded.inits.retain(|p| (p.pid, p.start) != (pid, start));
            recorded
                .forwarders
                .retain(|f| (f.pid, f.start) != (pid, start));
            if pid == INIT_PID {
                recorded.init = InitModel::Dead;
            }
        }
        signalled
    }

    fn mount_points(&self) -> Vec<PathBuf> {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::MountPoints);
        recorded.mounts.clone()
    }

    fn cgroup_names(&self, _cgroups: Option<&Cgroups>) -> Vec<String> {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::CgroupNames);
        recorded
            .cgroups
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn empty_cgroup_age(&self, _cgroups: Option<&Cgroups>, name: &str) -> Option<Duration> {
        let mut recorded = self.lock();
        recorded
            .calls
            .push(HostCall::EmptyCgroupAge(name.to_string()));
        recorded
            .cgroups
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, age)| *age)
    }

    fn sweep_tables(&self) -> Vec<String> {
        let mut recorded = self.lock();
        recorded.calls.push(HostCall::SweepTables);
        std::mem::take(&mut recorded.tables)
    }
}
