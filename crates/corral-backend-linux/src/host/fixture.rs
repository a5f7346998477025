//! The fixture of the seam's tests: a temporary state directory whose host
//! effects a [`RecordingHost`] records, and the call sequences a teardown
//! of its sandbox, and a failed create's rollback, make. The tests of
//! teardown, of create and its rollback and of gc all build on it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::recording::{INIT_PID, INIT_START, OUTER_PID};
use super::{HostCall, RecordingHost};
use crate::cgroup::Cgroups;
use crate::destroy::{GRACE, KILLED, OUTER};
use crate::rollback::{Piece, Progress};
use crate::state::{Meta, State};

/// The sandbox the fixture is about.
pub(crate) const ID: &str = "lnx-00112233445566ff";
/// The get-or-create key it claims.
pub(crate) const KEY: &str = "the-key";

/// A state directory, its host effects recorded by `host`.
pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) state: State,
    pub(crate) host: Arc<RecordingHost>,
}

impl Fixture {
    /// An empty state directory.
    pub(crate) fn empty(host: RecordingHost, rootless: bool) -> Self {
        Self::open(host, rootless, false)
    }

    /// An empty state directory, with a cgroup hierarchy (never touched:
    /// its effects are the host's) when `cgroups`.
    pub(crate) fn open(host: RecordingHost, rootless: bool, cgroups: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let host = Arc::new(host);
        let cgroups = cgroups.then(|| Cgroups::unified_at(dir.path().join("cgroup")));
        let mut state =
            State::open(dir.path(), cgroups, host.clone()).expect("the state directory opens");
        state.rootless = rootless;
        Fixture {
            _dir: dir,
            state,
            host,
        }
    }

    /// A state directory holding sandbox [`ID`] (claiming [`KEY`]): its
    /// directory and its record.
    pub(crate) fn new(host: RecordingHost, rootless: bool) -> Self {
        let f = Self::empty(host, rootless);
        f.make_dir();
        f.write_record();
        f
    }

    /// Makes the sandbox's directory.
    pub(crate) fn make_dir(&self) {
        std::fs::create_dir(self.dir()).expect("the sandbox directory");
    }

    /// Writes the sandbox's record.
    pub(crate) fn write_record(&self) {
        let meta = Meta {
            id: ID.to_string(),
            key: Some(KEY.try_into().unwrap()),
            labels: Default::default(),
            created_at_ms: 1,
            env: Default::default(),
            network_none: false,
            init_pid: INIT_PID,
            init_start: INIT_START,
            disk_bytes: 1 << 20,
            disk_layer: crate::disk::DiskLayer::Tmpfs,
            disk_fallback: None,
            image: "host".to_string(),
            expires_at_ms: None,
        };
        let bytes = serde_json::to_vec(&meta).expect("the record encodes");
        std::fs::write(self.state.meta_path(ID), bytes).expect("the record is written");
    }

    /// The sandbox's directory.
    pub(crate) fn dir(&self) -> PathBuf {
        self.state.sandbox_dir(ID)
    }

    /// The calls before PID 1 is stopped; `record` when there is a record
    /// naming a PID 1 to look for.
    pub(crate) fn before_init(&self, record: bool) -> Vec<HostCall> {
        let mut calls = vec![
            HostCall::ThawCgroup(ID.into()),
            HostCall::RemoveRecord(self.state.meta_path(ID)),
            HostCall::ClosePreviews(self.dir()),
            HostCall::SendShutdown(self.dir()),
        ];
        if record {
            calls.push(HostCall::OpenProcess(INIT_PID));
        }
        calls
    }

    /// The calls stopping a PID 1 that is alive; `killed` when it needs
    /// `SIGKILL`.
    pub(crate) fn stopping_live_init(&self, killed: bool) -> Vec<HostCall> {
        let mut calls = vec![
            HostCall::OuterInit(INIT_PID),
            HostCall::OpenProcess(OUTER_PID),
            HostCall::WaitExit(INIT_PID, GRACE),
        ];
        if killed {
            calls.push(HostCall::Kill(INIT_PID));
            calls.push(HostCall::WaitExit(INIT_PID, KILLED));
        }
        calls.push(HostCall::WaitExit(OUTER_PID, OUTER));
        calls
    }

    /// The calls after PID 1 is gone that a destroy waits for: the
    /// network's teardown and the cgroup emptied (the id range's release
    /// follows when both succeeded, [`Self::range_release`]).
    pub(crate) fn after_init(&self) -> Vec<HostCall> {
        vec![
            HostCall::TeardownNetwork(self.dir()),
            HostCall::EmptyCgroup(ID.into()),
        ]
    }

    /// The call releasing the id range, once the sandbox is stopped.
    pub(crate) fn range_release(&self) -> HostCall {
        HostCall::ReleaseIdRange(ID.into())
    }

    /// The sandbox's entry in `reaping/`.
    pub(crate) fn entry(&self) -> PathBuf {
        self.state.reaping_entry(ID)
    }

    /// The calls handing the stopped sandbox to its reaper.
    pub(crate) fn handing_off(&self) -> Vec<HostCall> {
        vec![
            HostCall::MoveToReaping(self.dir(), self.entry()),
            HostCall::StartReaper(self.entry()),
        ]
    }

    /// The calls finishing the stopped sandbox whose directory is `dir`
    /// (its own, or its entry): the unmount (none rootless), the cgroup's
    /// removal, and the directory's when `removed` (every step before
    /// succeeded).
    pub(crate) fn finishing(&self, dir: &Path, rootless: bool, removed: bool) -> Vec<HostCall> {
        let mut calls = Vec::new();
        if !rootless {
            calls.push(HostCall::UnmountAll(dir.join(crate::state::FS_DIR)));
        }
        calls.push(HostCall::RemoveCgroup(ID.into()));
        if removed {
            calls.push(HostCall::RemoveSandboxDir(dir.to_path_buf()));
        }
        calls
    }

    /// The call releasing the key claim.
    pub(crate) fn key_release(&self) -> HostCall {
        HostCall::ReleaseKey(self.state.key_path(KEY), ID.into())
    }

    /// The calls of the sandbox's teardown here and now, with or without a
    /// record (its init already stopped: opening it finds nothing to
    /// signal).
    pub(crate) fn teardown(&self, record: bool, rootless: bool) -> Vec<HostCall> {
        let mut calls = self.before_init(record);
        calls.extend(self.after_init());
        calls.push(self.range_release());
        calls.extend(self.finishing(&self.dir(), rootless, true));
        calls
    }

    /// The calls of the rollback of a create that built the pieces of
    /// `progress` (its init already stopped): the sandbox's teardown once
    /// its directory exists, else the release of what the pool made; the
    /// key claim's release last.
    pub(crate) fn rollback_of(&self, progress: &Progress, rootless: bool) -> Vec<HostCall> {
        let mut calls = match progress.has(Piece::Directory) {
            true => self.teardown(progress.has(Piece::Record), rootless),
            false => [
                (Piece::Cgroup, HostCall::RemoveCgroup(ID.into())),
                (Piece::IdRange, HostCall::ReleaseIdRange(ID.into())),
            ]
            .into_iter()
            .filter(|(piece, _)| progress.has(*piece))
            .map(|(_, call)| call)
            .collect(),
        };
        if progress.has(Piece::KeyClaim) {
            calls.push(self.key_release());
        }
        calls
    }

    /// The call that reclaims `piece`.
    pub(crate) fn undo_of(&self, piece: Piece, rootless: bool) -> HostCall {
        match piece {
            Piece::Cgroup | Piece::Init => HostCall::RemoveCgroup(ID.into()),
            Piece::IdRange => HostCall::ReleaseIdRange(ID.into()),
            Piece::KeyClaim => self.key_release(),
            Piece::Directory | Piece::ControlSocket => HostCall::RemoveSandboxDir(self.dir()),
            Piece::WritableLayer => HostCall::UnmountAll(self.state.fs_dir(ID)),
            Piece::ImageRoot if rootless => HostCall::RemoveSandboxDir(self.dir()),
            Piece::ImageRoot => HostCall::UnmountAll(self.state.fs_dir(ID)),
            Piece::Network => HostCall::TeardownNetwork(self.dir()),
            Piece::Previews => HostCall::ClosePreviews(self.dir()),
            Piece::Record => HostCall::RemoveRecord(self.state.meta_path(ID)),
        }
    }
}
