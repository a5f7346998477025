//! gc's rules on a [`RecordingHost`]: which sandbox is live, which init
//! and forwarder are orphans, what is stale, and what is left alone when in
//! doubt — each situation with the host effects a pass makes. No root,
//! nothing touched but a temporary state directory.

use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::host::fixture::{Fixture, ID, KEY};
use crate::host::recording::{INIT_PID, INIT_START};
use crate::host::{Forwarder, HostCall, HostStep, InitModel, InitProcess, RecordingHost};

/// A sandbox id with no directory in the fixture's state directory.
const GONE: &str = "lnx-00000000000000aa";
/// Another one.
const OTHER: &str = "lnx-00000000000000bb";
/// Yet another one.
const THIRD: &str = "lnx-00000000000000cc";
/// Comfortably past [`CGROUP_GRACE`].
const OLD: Duration = Duration::from_secs(3600);

/// What is in the state directory for the fixture's sandbox [`ID`].
#[derive(Debug, Clone, Copy)]
enum Sandbox {
    /// Its directory and record; `expired` when its lifetime is over.
    Complete { expired: bool },
    /// Its directory only (a create in flight or abandoned), with this
    /// `creator` file, if any.
    HalfMade(Option<&'static str>),
    /// Nothing.
    Absent,
}

/// Where a forwarder's sandbox directory is.
#[derive(Debug, Clone, Copy)]
enum ServedDir {
    /// `sandboxes/<id>` of the fixture's state directory.
    Here(&'static str),
    /// A sandbox of another state directory.
    Elsewhere,
}

/// One situation and what a pass does about it.
struct Row {
    what: &'static str,
    init: InitModel,
    sandbox: Sandbox,
    /// The `corral-init` processes on the host: pid, start, cgroup name.
    inits: &'static [(u32, u64, &'static str)],
    forwarders: &'static [(u32, u64, ServedDir)],
    /// Mount points, relative to the sandbox directory of [`ID`].
    mounts: &'static [&'static str],
    /// Cgroups: name, and how long ago it last changed while empty.
    cgroups: &'static [(&'static str, Option<Duration>)],
    tables: &'static [&'static str],
    fail: Option<HostStep>,
    /// The host effects of the pass, in order.
    effects: fn(&Fixture) -> Vec<HostCall>,
    /// What the report says: sandboxes reclaimed, processes killed, mounts
    /// detached, cgroups removed, errors, sandboxes spared.
    report: (
        &'static [&'static str],
        usize,
        usize,
        &'static [&'static str],
        usize,
    ),
    spared: &'static [&'static str],
}

/// The effects of tearing down [`ID`] once its PID 1 is gone.
fn torn_down(f: &Fixture) -> Vec<HostCall> {
    let mut calls = f.teardown(true, false);
    calls.push(f.key_release());
    calls
}

/// The same, of a half-made [`ID`] (no record, hence no key, no PID 1).
fn half_made_torn_down(f: &Fixture) -> Vec<HostCall> {
    f.teardown(false, false)
}

/// The effects of killing the orphaned PID 1 of [`ID`], thawed first.
fn orphan_killed() -> Vec<HostCall> {
    vec![
        HostCall::ThawCgroup(ID.into()),
        HostCall::KillAll(vec![(INIT_PID, INIT_START)]),
    ]
}

/// A pass that kills [`ID`]'s orphaned PID 1, tears the sandbox down and
/// sweeps the firewall tables.
fn orphan_killed_then_torn_down(f: &Fixture) -> Vec<HostCall> {
    let mut calls = orphan_killed();
    calls.extend(torn_down(f));
    calls.push(HostCall::SweepTables);
    calls
}

/// A pass that finds nothing to do but sweep the firewall tables.
fn nothing(_: &Fixture) -> Vec<HostCall> {
    vec![HostCall::SweepTables]
}

/// A row with nothing on the host but the fixture's sandbox.
const BASE: Row = Row {
    what: "",
    init: InitModel::Running,
    sandbox: Sandbox::Complete { expired: false },
    inits: &[],
    forwarders: &[],
    mounts: &[],
    cgroups: &[],
    tables: &[],
    fail: None,
    effects: nothing,
    report: (&[], 0, 0, &[], 0),
    spared: &[],
};

const ROWS: &[Row] = &[
    Row {
        what: "a running sandbox, its init, forwarder, mounts and cgroup are left alone",
        inits: &[(INIT_PID, INIT_START, ID)],
        forwarders: &[(5000, 1, ServedDir::Here(ID))],
        mounts: &["fs", "fs/root"],
        cgroups: &[(ID, Some(OLD))],
        spared: &[ID],
        ..BASE
    },
    Row {
        what: "a paused sandbox is live: its frozen init is neither thawed nor killed",
        init: InitModel::Paused,
        inits: &[(INIT_PID, INIT_START, ID)],
        mounts: &["fs"],
        spared: &[ID],
        ..BASE
    },
    Row {
        what: "a hung sandbox is live: its PID 1 runs",
        init: InitModel::Hung,
        spared: &[ID],
        ..BASE
    },
    Row {
        what: "a dead sandbox is torn down, and its mounts go with it",
        init: InitModel::Dead,
        mounts: &["fs", "fs/root"],
        effects: |f| {
            let mut calls = torn_down(f);
            calls.push(HostCall::SweepTables);
            calls
        },
        report: (&[ID], 0, 0, &[], 0),
        ..BASE
    },
    Row {
        what: "an expired sandbox's init is thawed and killed, then the sandbox torn down",
        sandbox: Sandbox::Complete { expired: true },
        inits: &[(INIT_PID, INIT_START, ID)],
        forwarders: &[(5000, 1, ServedDir::Here(ID))],
        mounts: &["fs"],
        cgroups: &[(ID, Some(OLD))],
        effects: orphan_killed_then_torn_down,
        report: (&[ID], 1, 0, &[], 0),
        ..BASE
    },
    Row {
        what: "a frozen expired init dies once thawed (the thaw comes first)",
        init: InitModel::Paused,
        sandbox: Sandbox::Complete { expired: true },
        inits: &[(INIT_PID, INIT_START, ID)],
        effects: orphan_killed_then_torn_down,
        report: (&[ID], 1, 0, &[], 0),
        ..BASE
    },
    Row {
        what: "a half-made sandbox whose creator runs is live, and so is its init",
        sandbox: Sandbox::HalfMade(Some("4242 7")),
        inits: &[(INIT_PID, INIT_START, ID)],
        mounts: &["fs"],
        spared: &[ID],
        ..BASE
    },
    Row {
        what: "a half-made sandbox whose creator is gone: its init killed, it torn down",
        sandbox: Sandbox::HalfMade(Some("4242 8")),
        inits: &[(INIT_PID, INIT_START, ID)],
        mounts: &["fs"],
        effects: |f| {
            let mut calls = orphan_killed();
            calls.extend(half_made_torn_down(f));
            calls.push(HostCall::SweepTables);
            calls
        },
        report: (&[ID], 1, 0, &[], 0),
        ..BASE
    },
    Row {
        what: "a young half-made sandbox without a creator file gets its grace",
        sandbox: Sandbox::HalfMade(None),
        inits: &[(INIT_PID, INIT_START, ID)],
        spared: &[ID],
        ..BASE
    },
    Row {
        what: "inits of sandboxes of other state directories, or of no sandbox, are left alone",
        sandbox: Sandbox::Absent,
        inits: &[(5001, 1, GONE), (5002, 1, "user.slice")],
        ..BASE
    },
    Row {
        what: "a forwarder of a sandbox gone from here is killed; another directory's is not",
        sandbox: Sandbox::Absent,
        forwarders: &[
            (6001, 1, ServedDir::Here(GONE)),
            (6002, 1, ServedDir::Elsewhere),
        ],
        effects: |_| vec![HostCall::KillAll(vec![(6001, 1)]), HostCall::SweepTables],
        report: (&[], 1, 0, &[], 0),
        ..BASE
    },
    Row {
        what: "a mount of a dead sandbox outside its writable layer is detached after it",
        init: InitModel::Dead,
        mounts: &["fs", "extra"],
        effects: |f| {
            let mut calls = torn_down(f);
            calls.push(HostCall::UnmountAll(f.dir().join("extra")));
            calls.push(HostCall::SweepTables);
            calls
        },
        report: (&[ID], 0, 1, &[], 0),
        ..BASE
    },
    Row {
        what: "a dead sandbox whose unmount fails is kept for the next pass, and reported",
        init: InitModel::Dead,
        mounts: &["fs"],
        fail: Some(HostStep::UnmountAll),
        effects: |f| {
            let mut calls = f.before_init(true);
            calls.extend(f.after_init());
            calls.push(f.range_release());
            calls.extend(f.finishing(&f.dir(), false, false));
            calls.push(f.key_release());
            // Stale, so the sweep of mounts tries again (and fails again).
            calls.push(HostCall::UnmountAll(f.state.fs_dir(ID)));
            calls.push(HostCall::SweepTables);
            calls
        },
        report: (&[], 0, 0, &[], 1),
        ..BASE
    },
    Row {
        what: "only an old, empty cgroup named like a sandbox with no directory is removed",
        sandbox: Sandbox::Absent,
        cgroups: &[
            (GONE, Some(OLD)),
            (OTHER, Some(Duration::from_secs(1))),
            (THIRD, None),
            ("user.slice", Some(OLD)),
        ],
        effects: |_| vec![HostCall::RemoveCgroup(GONE.into()), HostCall::SweepTables],
        report: (&[], 0, 0, &[GONE], 0),
        ..BASE
    },
    Row {
        what: "the cgroup of a sandbox whose directory is still here is left to its teardown",
        init: InitModel::Dead,
        cgroups: &[(ID, Some(OLD))],
        fail: Some(HostStep::RemoveCgroup),
        effects: |f| {
            let mut calls = f.before_init(true);
            calls.extend(f.after_init());
            calls.push(f.range_release());
            calls.extend(f.finishing(&f.dir(), false, false));
            calls.push(f.key_release());
            calls.push(HostCall::SweepTables);
            calls
        },
        report: (&[], 0, 0, &[], 1),
        ..BASE
    },
    Row {
        what: "leftover firewall tables are swept and reported",
        sandbox: Sandbox::Absent,
        tables: &["vc0123456789abcd"],
        ..BASE
    },
];

/// The fixture in the situation of `row`.
fn situation(row: &Row) -> Fixture {
    let mut host = RecordingHost::new(row.init);
    if let Some(step) = row.fail {
        host = host.failing(step);
    }
    let f = match row.sandbox {
        Sandbox::Complete { expired } => {
            let f = Fixture::new(host, false);
            if expired {
                let mut meta = read_meta(&f.state, ID).unwrap().unwrap();
                meta.expires_at_ms = Some(1);
                std::fs::write(f.state.meta_path(ID), serde_json::to_vec(&meta).unwrap()).unwrap();
            }
            f
        }
        Sandbox::HalfMade(creator) => {
            let f = Fixture::empty(host, false);
            f.make_dir();
            if let Some(creator) = creator {
                std::fs::write(f.dir().join(CREATOR_FILE), creator).unwrap();
            }
            f
        }
        Sandbox::Absent => Fixture::empty(host, false),
    };
    let sandboxes = f.state.sandboxes();
    f.host.set_inits(
        row.inits
            .iter()
            .map(|&(pid, start, cgroup)| InitProcess {
                pid,
                start,
                cgroups: vec![String::new(), cgroup.to_string()],
            })
            .collect(),
    );
    f.host.set_forwarders(
        row.forwarders
            .iter()
            .map(|&(pid, start, served)| Forwarder {
                pid,
                start,
                dir: match served {
                    ServedDir::Here(id) => sandboxes.join(id),
                    ServedDir::Elsewhere => PathBuf::from("/elsewhere/sandboxes").join(OTHER),
                },
            })
            .collect(),
    );
    let mut mounts: Vec<PathBuf> = row.mounts.iter().map(|m| f.dir().join(m)).collect();
    mounts.push(PathBuf::from("/proc"));
    f.host.set_mounts(mounts);
    f.host.set_cgroups(
        row.cgroups
            .iter()
            .map(|&(name, age)| (name.to_string(), age))
            .collect(),
    );
    f.host
        .set_tables(row.tables.iter().map(|t| t.to_string()).collect());
    f
}

#[test]
fn a_pass_spares_what_is_live_and_reclaims_what_is_not() {
    for row in ROWS {
        let f = situation(row);
        let report = gc(&f.state).unwrap_or_else(|e| panic!("{}: {e}", row.what));
        let expected: Vec<HostCall> = (row.effects)(&f)
            .into_iter()
            .filter(HostCall::is_effect)
            .collect();
        assert_eq!(f.host.effects(), expected, "{}", row.what);
        let (sandboxes, killed, detached, cgroups, errors) = row.report;
        assert_eq!(report.sandboxes, sandboxes, "{}", row.what);
        assert_eq!(report.host.processes_killed, killed, "{}", row.what);
        assert_eq!(report.host.mounts_detached, detached, "{}", row.what);
        assert_eq!(report.host.cgroups, cgroups, "{}", row.what);
        assert_eq!(report.errors.len(), errors, "{}: {report:?}", row.what);
        assert_eq!(report.host.spared, row.spared, "{}", row.what);
        assert_eq!(report.host.tables, row.tables, "{}", row.what);
    }
}

#[test]
fn a_create_reclaims_the_expired_holder_of_its_key_and_no_other() {
    // (init, expired, whether the holder is torn down)
    let cases = [
        (InitModel::Running, true, true),
        (InitModel::Running, false, false),
        (InitModel::Dead, false, false),
    ];
    for (init, expired, reclaimed) in cases {
        let f = situation(&Row {
            init,
            sandbox: Sandbox::Complete { expired },
            ..BASE
        });
        std::fs::write(f.state.key_path(KEY), ID).unwrap();
        free_expired_key(&f.state, KEY).unwrap();
        // Stopped, then handed to a reaper as `destroy` does: the create
        // needs its key, not the holder's directory gone.
        let handed_off = || {
            let mut calls = f.before_init(true);
            calls.extend(f.after_init());
            calls.push(f.range_release());
            calls.extend(f.handing_off());
            calls.push(f.key_release());
            calls
        };
        let expected = match reclaimed {
            true => handed_off()
                .into_iter()
                .filter(HostCall::is_effect)
                .collect(),
            false => Vec::new(),
        };
        assert_eq!(f.host.effects(), expected, "{init:?} expired {expired}");
    }
}

#[test]
fn a_sandbox_is_live_while_its_init_or_creator_runs_and_it_has_not_expired() {
    // (init, expired, record kept, creator file, live)
    let cases = [
        (InitModel::Running, false, true, None, true),
        (InitModel::Paused, false, true, None, true),
        (InitModel::Hung, false, true, None, true),
        (InitModel::Dead, false, true, None, false),
        (InitModel::Running, true, true, None, false),
        (InitModel::Running, false, false, Some("4242 7"), true),
        (InitModel::Running, false, false, Some("4242 8"), false),
        (InitModel::Dead, false, false, Some("4242 7"), false),
        (InitModel::Running, false, false, None, true),
    ];
    for (init, expired, record, creator, live) in cases {
        let f = Fixture::new(RecordingHost::new(init), false);
        let case = format!("{init:?} expired {expired} record {record} creator {creator:?}");
        if expired {
            let mut meta = read_meta(&f.state, ID).unwrap().unwrap();
            meta.expires_at_ms = Some(1);
            std::fs::write(f.state.meta_path(ID), serde_json::to_vec(&meta).unwrap()).unwrap();
        }
        if !record {
            std::fs::remove_file(f.state.meta_path(ID)).unwrap();
        }
        if let Some(creator) = creator {
            std::fs::write(f.state.sandbox_dir(ID).join(CREATOR_FILE), creator).unwrap();
        }
        assert_eq!(is_live(&f.state, ID), live, "{case}");
        // Judging liveness only looks: it never acts on the host.
        assert!(
            f.host
                .calls()
                .iter()
                .all(|c| matches!(c, HostCall::ProcessStart(_))),
            "{case}: {:?}",
            f.host.calls()
        );
    }
}

#[test]
fn a_half_made_sandbox_lives_exactly_as_long_as_its_creator() {
    let dir = tempfile::tempdir().unwrap();
    let state = State::open(
        dir.path(),
        None,
        std::sync::Arc::new(crate::real_host::RealHost),
    )
    .unwrap();
    let id = "lnx-00000000000000aa";
    std::fs::create_dir(state.sandbox_dir(id)).unwrap();
    assert_eq!(creator_alive(&state, id), None);
    assert!(is_live(&state, id), "a fresh directory gets its grace");
    mark_creator(&state, id);
    assert_eq!(creator_alive(&state, id), Some(true));
    assert!(is_live(&state, id));
    std::fs::write(state.sandbox_dir(id).join(CREATOR_FILE), "4294967295 1").unwrap();
    assert_eq!(creator_alive(&state, id), Some(false), "no such creator");
    assert!(!is_live(&state, id));
}

/// Entries of `reaping/` (destroyed sandboxes handed to a reaper): a pass
/// finishes one no reaper holds, in the reaper's own order, and reports it;
/// it leaves one a live reaper holds alone, and that entry's cgroup too;
/// where the removal refuses, it detaches what the mount table names
/// below the entry (the only read of the table) and tries once more.
///
/// | reaper  | removal | the pass                                        |
/// |---------|---------|-------------------------------------------------|
/// | gone    | works   | unmount, cgroup, directory; reported            |
/// | live    | —       | nothing (the old cgroup is the reaper's)        |
/// | gone    | refuses | finish, detach the mount below, finish; error   |
#[test]
fn a_pass_finishes_the_entries_no_reaper_holds_and_only_those() {
    let rows = [(false, false), (true, false), (false, true)];
    for (held, refuses) in rows {
        let mut host = RecordingHost::new(InitModel::Dead);
        if refuses {
            host = host.failing(HostStep::RemoveSandboxDir);
        }
        let f = Fixture::empty(host, false);
        std::fs::create_dir(f.entry()).unwrap();
        // Outside the known mount point: detaching it leaves this one.
        let below = f.entry().join("extra");
        f.host.set_mounts(vec![f.entry().join("fs"), below.clone()]);
        f.host.set_cgroups(vec![(ID.into(), Some(OLD))]);
        if held {
            f.host.set_held_entries(vec![f.entry()]);
        }
        let report = gc(&f.state).unwrap();
        let mut expected = Vec::new();
        if !held {
            expected.extend(f.finishing(&f.entry(), false, true));
        }
        if refuses {
            expected.push(HostCall::UnmountAll(below));
            expected.extend(f.finishing(&f.entry(), false, true));
        }
        expected.push(HostCall::SweepTables);
        let what = format!("held {held}, refuses {refuses}");
        assert_eq!(f.host.effects(), expected, "{what}");
        let reclaimed: &[&str] = if held || refuses { &[] } else { &[ID] };
        assert_eq!(report.sandboxes, reclaimed, "{what}");
        assert_eq!(report.errors.len(), usize::from(refuses), "{what}");
        assert!(report.host.cgroups.is_empty(), "{what}: {report:?}");
    }
}
