//! The order of a sandbox's teardown and what it still does after a failed
//! step, on a [`RecordingHost`]: no root, nothing touched but a temporary
//! state directory.

use std::sync::Arc;

use corral_backend::ErrorCode;

use super::recording::{INIT_PID, INIT_START, OUTER_PID};
use super::{HostCall, HostStep, InitModel, RecordingHost};
use crate::destroy::{self, GRACE, KILLED, OUTER};
use crate::state::{Meta, State};

pub(crate) const ID: &str = "lnx-00112233445566ff";
const KEY: &str = "the-key";

/// A state directory holding sandbox [`ID`] (claiming [`KEY`]), its host
/// effects recorded by `host`.
pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) state: State,
    pub(crate) host: Arc<RecordingHost>,
}

impl Fixture {
    pub(crate) fn new(host: RecordingHost, rootless: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let host = Arc::new(host);
        let mut state = State::open(dir.path(), None)
            .expect("the state directory opens")
            .with_host(host.clone());
        state.rootless = rootless;
        std::fs::create_dir(state.sandbox_dir(ID)).expect("the sandbox directory");
        let meta = Meta {
            id: ID.to_string(),
            key: Some(KEY.to_string()),
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
        std::fs::write(state.meta_path(ID), bytes).expect("the record is written");
        Fixture {
            _dir: dir,
            state,
            host,
        }
    }

    fn dir(&self) -> std::path::PathBuf {
        self.state.sandbox_dir(ID)
    }

    /// The calls before PID 1 is stopped.
    fn before_init(&self) -> Vec<HostCall> {
        vec![
            HostCall::ThawCgroup(ID.into()),
            HostCall::RemoveRecord(self.state.meta_path(ID)),
            HostCall::ClosePreviews(self.dir()),
            HostCall::SendShutdown(ID.into()),
            HostCall::OpenProcess(INIT_PID),
        ]
    }

    /// The calls stopping a PID 1 that is alive; `killed` when it needs
    /// `SIGKILL`.
    fn stopping_live_init(&self, killed: bool) -> Vec<HostCall> {
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

    /// The calls after PID 1 is gone, up to the unmount (none rootless).
    fn releasing(&self, rootless: bool) -> Vec<HostCall> {
        let mut calls = vec![
            HostCall::TeardownNetwork(self.dir()),
            HostCall::RemoveCgroup(ID.into()),
        ];
        if !rootless {
            calls.push(HostCall::UnmountAll(self.state.fs_dir(ID)));
        }
        calls
    }

    /// The calls once everything before succeeded.
    fn removing(&self) -> Vec<HostCall> {
        vec![
            HostCall::ReleaseIdRange(ID.into()),
            HostCall::RemoveSandboxDir(self.dir()),
        ]
    }

    fn key_release(&self) -> HostCall {
        HostCall::ReleaseKey(KEY.into(), ID.into())
    }
}

#[test]
fn a_destroy_tears_down_in_order_whatever_state_the_init_is_in() {
    // (init, rootless, whether PID 1 is alive, whether it needs SIGKILL)
    let cases = [
        (InitModel::Running, false, true, false),
        // Thawed before Shutdown, so it exits on it: no SIGKILL.
        (InitModel::Paused, false, true, false),
        (InitModel::Hung, false, true, true),
        (InitModel::Dead, false, false, false),
        // Rootless, nothing is mounted on the host: no unmount.
        (InitModel::Running, true, true, false),
    ];
    for (init, rootless, alive, killed) in cases {
        let f = Fixture::new(RecordingHost::new(init), rootless);
        destroy::destroy(&f.state, ID)
            .unwrap_or_else(|e| panic!("{init:?} (rootless {rootless}): {e}"));
        let mut expected = f.before_init();
        if alive {
            expected.extend(f.stopping_live_init(killed));
        }
        expected.extend(f.releasing(rootless));
        expected.extend(f.removing());
        expected.push(f.key_release());
        assert_eq!(f.host.calls(), expected, "{init:?} (rootless {rootless})");
    }
}

#[test]
fn a_failed_step_is_reported_and_every_step_not_needing_it_still_runs() {
    // (failing step, whether the steps gated on every step before — id
    // range release and directory removal — run, expected message start)
    let cases = [
        (HostStep::ClosePreviews, false, ""),
        (HostStep::TeardownNetwork, false, ""),
        (HostStep::RemoveCgroup, false, ""),
        (
            HostStep::UnmountAll,
            false,
            "linux state: unmounting sandbox",
        ),
        (
            HostStep::RemoveSandboxDir,
            true,
            "linux state: removing sandbox",
        ),
    ];
    for (step, removed, prefix) in cases {
        let f = Fixture::new(RecordingHost::new(InitModel::Running).failing(step), false);
        let err = destroy::destroy(&f.state, ID).expect_err(&format!("{step:?} fails"));
        assert_eq!(err.code(), ErrorCode::Io, "{step:?}");
        assert!(
            err.message().starts_with(prefix) && err.message().contains(&step.injected_message()),
            "{step:?}: {}",
            err.message()
        );
        let mut expected = f.before_init();
        expected.extend(f.stopping_live_init(false));
        expected.extend(f.releasing(false));
        if removed {
            expected.extend(f.removing());
        }
        // The record is gone whatever failed: the key is released anyway.
        expected.push(f.key_release());
        assert_eq!(f.host.calls(), expected, "{step:?}");
    }
}

#[test]
fn the_first_of_several_failures_is_the_one_reported() {
    let host = RecordingHost::new(InitModel::Running)
        .failing(HostStep::UnmountAll)
        .failing(HostStep::TeardownNetwork);
    let f = Fixture::new(host, false);
    let err = destroy::teardown(&f.state, ID).expect_err("two steps fail");
    assert_eq!(
        err.message(),
        HostStep::TeardownNetwork.injected_message(),
        "the network's failure comes before the unmount's"
    );
    let mut expected = f.before_init();
    expected.extend(f.stopping_live_init(false));
    expected.extend(f.releasing(false));
    assert_eq!(f.host.calls(), expected);
}

#[test]
fn a_sandbox_without_a_directory_or_a_malformed_id_touches_nothing() {
    for id in ["lnx-ffffffffffffffff", "../escape", "lnx-"] {
        let f = Fixture::new(RecordingHost::new(InitModel::Running), false);
        destroy::destroy(&f.state, id).expect("an unknown sandbox is destroyed");
        assert_eq!(f.host.calls(), Vec::new(), "{id}");
    }
}

#[test]
fn a_sandbox_without_a_record_is_still_torn_down_but_its_init_is_not_signalled() {
    let f = Fixture::new(RecordingHost::new(InitModel::Running), false);
    std::fs::remove_file(f.state.meta_path(ID)).expect("the record is removed");
    destroy::destroy(&f.state, ID).expect("the remains are reclaimed");
    let mut expected = f.before_init();
    // No record, no pid to stop (nor key to release): the cgroup's removal
    // kills what is left.
    expected.pop();
    expected.extend(f.releasing(false));
    expected.extend(f.removing());
    assert_eq!(f.host.calls(), expected);
}
