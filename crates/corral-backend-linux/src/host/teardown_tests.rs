//! The order of a sandbox's teardown and what it still does after a failed
//! step, on a [`RecordingHost`]: no root, nothing touched but a temporary
//! state directory.

use corral_backend::ErrorCode;

use super::fixture::{Fixture, ID};
use super::{HostCall, HostStep, InitModel, RecordingHost};
use crate::destroy;

/// What a caller relies on once `destroy` answers comes before the
/// answer, in order — the record gone, the preview ports closed, PID 1 and
/// the outer init dead, the network torn down, the cgroup empty, the id
/// range and the key free — and the rest (the unmount, the disk image, the
/// directory and the cgroup's directories) is handed to a reaper: the
/// directory moved to `reaping/`, a reaper started, nothing unmounted or
/// removed by the destroy itself.
#[test]
fn a_destroy_answers_once_the_sandbox_is_stopped_and_hands_the_rest_to_a_reaper() {
    // (init, rootless, whether PID 1 is alive, whether it needs SIGKILL)
    let cases = [
        (InitModel::Running, false, true, false),
        // Thawed before Shutdown, so it exits on it: no SIGKILL.
        (InitModel::Paused, false, true, false),
        (InitModel::Hung, false, true, true),
        (InitModel::Dead, false, false, false),
        // Rootless, the same: the reaper knows nothing is mounted.
        (InitModel::Running, true, true, false),
    ];
    for (init, rootless, alive, killed) in cases {
        let f = Fixture::new(RecordingHost::new(init), rootless);
        destroy::destroy(&f.state, ID)
            .unwrap_or_else(|e| panic!("{init:?} (rootless {rootless}): {e}"));
        let mut expected = f.before_init(true);
        if alive {
            expected.extend(f.stopping_live_init(killed));
        }
        expected.extend(f.after_init());
        expected.push(f.range_release());
        expected.extend(f.handing_off());
        expected.push(f.key_release());
        assert_eq!(f.host.calls(), expected, "{init:?} (rootless {rootless})");
    }
}

/// Where the hand-off fails, the destroy finishes the sandbox itself
/// before answering: in place when its directory could not move, in
/// `reaping/` (under the entry's lock) when no reaper started.
#[test]
fn a_destroy_whose_hand_off_fails_finishes_the_sandbox_itself() {
    for step in [HostStep::MoveToReaping, HostStep::StartReaper] {
        let f = Fixture::new(RecordingHost::new(InitModel::Running).failing(step), false);
        if step == HostStep::StartReaper {
            // The recording host moves nothing: the entry is made here.
            std::fs::create_dir(f.entry()).unwrap();
        }
        destroy::destroy(&f.state, ID).unwrap_or_else(|e| panic!("{step:?}: {e}"));
        let mut expected = f.before_init(true);
        expected.extend(f.stopping_live_init(false));
        expected.extend(f.after_init());
        expected.push(f.range_release());
        match step {
            HostStep::MoveToReaping => {
                expected.push(HostCall::MoveToReaping(f.dir(), f.entry()));
                expected.extend(f.finishing(&f.dir(), false, true));
            }
            _ => {
                expected.extend(f.handing_off());
                expected.push(HostCall::LockEntry(f.entry()));
                expected.extend(f.finishing(&f.entry(), false, true));
            }
        }
        expected.push(f.key_release());
        assert_eq!(f.host.calls(), expected, "{step:?}");
    }
}

#[test]
fn a_failed_step_is_reported_and_every_step_not_needing_it_still_runs() {
    // (failing step, whether the sandbox counts as stopped — id range
    // released, handed off — expected message start)
    let cases = [
        (HostStep::ClosePreviews, false, ""),
        (HostStep::TeardownNetwork, false, ""),
        (HostStep::EmptyCgroup, false, ""),
    ];
    for (step, stopped, prefix) in cases {
        let f = Fixture::new(RecordingHost::new(InitModel::Running).failing(step), false);
        let err = destroy::destroy(&f.state, ID).expect_err(&format!("{step:?} fails"));
        assert_eq!(err.code(), ErrorCode::Io, "{step:?}");
        assert!(
            err.message().starts_with(prefix) && err.message().contains(&step.injected_message()),
            "{step:?}: {}",
            err.message()
        );
        let mut expected = f.before_init(true);
        expected.extend(f.stopping_live_init(false));
        expected.extend(f.after_init());
        if stopped {
            expected.push(f.range_release());
        }
        // The record is gone whatever failed: the key is released anyway.
        expected.push(f.key_release());
        assert_eq!(f.host.calls(), expected, "{step:?}");
    }
}

/// A teardown here and now (a rollback's, a pass's): a failed step of the
/// finish keeps the directory, and is reported.
#[test]
fn a_failed_finish_keeps_the_directory_and_is_reported() {
    // (failing step, expected message start)
    let cases = [
        (HostStep::UnmountAll, "linux state: unmounting sandbox"),
        (HostStep::RemoveCgroup, ""),
        (HostStep::RemoveSandboxDir, "linux state: removing sandbox"),
    ];
    for (step, prefix) in cases {
        let f = Fixture::new(RecordingHost::new(InitModel::Running).failing(step), false);
        let err = destroy::teardown(&f.state, ID).expect_err(&format!("{step:?} fails"));
        assert!(
            err.message().starts_with(prefix) && err.message().contains(&step.injected_message()),
            "{step:?}: {}",
            err.message()
        );
        let mut expected = f.before_init(true);
        expected.extend(f.stopping_live_init(false));
        expected.extend(f.after_init());
        expected.push(f.range_release());
        // The directory's removal is tried only once the rest succeeded.
        let removed = step == HostStep::RemoveSandboxDir;
        expected.extend(f.finishing(&f.dir(), false, removed));
        assert_eq!(f.host.calls(), expected, "{step:?}");
    }
}

#[test]
fn the_first_of_several_failures_is_the_one_reported() {
    let host = RecordingHost::new(InitModel::Running)
        .failing(HostStep::EmptyCgroup)
        .failing(HostStep::TeardownNetwork);
    let f = Fixture::new(host, false);
    let err = destroy::teardown(&f.state, ID).expect_err("two steps fail");
    assert_eq!(
        err.message(),
        HostStep::TeardownNetwork.injected_message(),
        "the network's failure comes before the cgroup's"
    );
    let mut expected = f.before_init(true);
    expected.extend(f.stopping_live_init(false));
    expected.extend(f.after_init());
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
    let mut expected = f.before_init(true);
    // No record, no pid to stop (nor key to release): emptying the cgroup
    // kills what is left.
    expected.pop();
    expected.extend(f.after_init());
    expected.push(f.range_release());
    expected.extend(f.handing_off());
    assert_eq!(f.host.calls(), expected);
}
