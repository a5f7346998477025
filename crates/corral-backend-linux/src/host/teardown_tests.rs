//! The order of a sandbox's teardown and what it still does after a failed
//! step, on a [`RecordingHost`]: no root, nothing touched but a temporary
//! state directory.

use corral_backend::ErrorCode;

use super::fixture::{Fixture, ID};
use super::{HostStep, InitModel, RecordingHost};
use crate::destroy;

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
        let mut expected = f.before_init(true);
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
        let mut expected = f.before_init(true);
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
    let mut expected = f.before_init(true);
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
    let mut expected = f.before_init(true);
    // No record, no pid to stop (nor key to release): the cgroup's removal
    // kills what is left.
    expected.pop();
    expected.extend(f.releasing(false));
    expected.extend(f.removing());
    assert_eq!(f.host.calls(), expected);
}
