//! A failed create's rollback, for each step made to fail: the exact
//! undo calls on a [`RecordingHost`], and that every piece built has the
//! call that reclaims it. No root: nothing is touched but a temporary
//! state directory.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Piece, Progress, rollback};
use crate::host::recording::{INIT_PID, INIT_START};
use crate::host::{HostCall, InitModel, RecordingHost};
use crate::state::{Meta, State};

const ID: &str = "lnx-00112233445566aa";
const KEY: &str = "the-key";

/// A state directory whose host effects `host` records.
struct Fixture {
    _dir: tempfile::TempDir,
    state: State,
    host: Arc<RecordingHost>,
}

impl Fixture {
    fn new(rootless: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // The create stopped its init before the rollback.
        let host = Arc::new(RecordingHost::new(InitModel::Dead));
        let mut state = State::open(dir.path(), None)
            .expect("the state directory opens")
            .with_host(host.clone());
        state.rootless = rootless;
        Fixture {
            _dir: dir,
            state,
            host,
        }
    }

    /// Makes on disk what `progress` says was built and teardown reads:
    /// the directory and the record.
    fn build(&self, progress: &Progress) {
        if progress.has(Piece::Directory) {
            std::fs::create_dir(self.state.sandbox_dir(ID)).expect("the sandbox directory");
        }
        if progress.has(Piece::Record) {
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
            std::fs::write(self.state.meta_path(ID), bytes).expect("the record is written");
        }
    }

    fn dir(&self) -> PathBuf {
        self.state.sandbox_dir(ID)
    }

    /// The calls of the sandbox's teardown, with or without a record.
    fn teardown(&self, record: bool, rootless: bool) -> Vec<HostCall> {
        let mut calls = vec![
            HostCall::ThawCgroup(ID.into()),
            HostCall::RemoveRecord(self.state.meta_path(ID)),
            HostCall::ClosePreviews(self.dir()),
            HostCall::SendShutdown(ID.into()),
        ];
        if record {
            // Already stopped: opening it finds nothing to signal.
            calls.push(HostCall::OpenProcess(INIT_PID));
        }
        calls.push(HostCall::TeardownNetwork(self.dir()));
        calls.push(HostCall::RemoveCgroup(ID.into()));
        if !rootless {
            calls.push(HostCall::UnmountAll(self.state.fs_dir(ID)));
        }
        calls.push(HostCall::ReleaseIdRange(ID.into()));
        calls.push(HostCall::RemoveSandboxDir(self.dir()));
        calls
    }

    /// The call that reclaims `piece`.
    fn undo_of(&self, piece: Piece, rootless: bool) -> HostCall {
        match piece {
            Piece::Cgroup | Piece::Init => HostCall::RemoveCgroup(ID.into()),
            Piece::IdRange => HostCall::ReleaseIdRange(ID.into()),
            Piece::KeyClaim => HostCall::ReleaseKey(KEY.into(), ID.into()),
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

/// The progress of a create with `pieces` built (the key among them
/// when [`Piece::KeyClaim`] is).
fn progress(pieces: &[Piece]) -> Progress {
    let mut p = Progress::new(ID);
    for piece in pieces {
        match piece {
            Piece::KeyClaim => p.claimed(KEY),
            other => p.built(*other),
        }
    }
    p
}

#[test]
fn each_failed_step_undoes_exactly_what_was_built_before_it() {
    use Piece::*;
    let pool = [Cgroup, IdRange, KeyClaim];
    let dir = [Cgroup, IdRange, KeyClaim, Directory];
    let root = [
        Cgroup,
        IdRange,
        KeyClaim,
        Directory,
        WritableLayer,
        ImageRoot,
    ];
    let socket = [
        Cgroup,
        IdRange,
        KeyClaim,
        Directory,
        WritableLayer,
        ImageRoot,
        ControlSocket,
    ];
    let run = [socket.as_slice(), &[Init]].concat();
    let net = [run.as_slice(), &[Network]].concat();
    let published = [net.as_slice(), &[Previews]].concat();
    let recorded = [published.as_slice(), &[Record]].concat();
    // (failing step, pieces built when it fails)
    let rows: [(&str, &[Piece]); 11] = [
        ("the sandbox directory", &pool),
        ("the mount point", &dir),
        ("the writable layer", &dir),
        ("the image root", &root),
        ("the control socket", &root),
        ("the cgroup limits", &socket),
        ("the init's go-ahead", &socket),
        ("the init's start time", &run),
        ("the network", &net),
        ("the preview ports", &published),
        ("the commit", &recorded),
    ];
    for (step, pieces) in rows {
        let f = Fixture::new(false);
        let p = progress(pieces);
        f.build(&p);
        rollback(&f.state, &p);
        let mut expected = match p.has(Directory) {
            true => f.teardown(p.has(Record), false),
            false => vec![
                HostCall::RemoveCgroup(ID.into()),
                HostCall::ReleaseIdRange(ID.into()),
            ],
        };
        expected.push(HostCall::ReleaseKey(KEY.into(), ID.into()));
        let calls = f.host.calls();
        assert_eq!(calls, expected, "{step} fails");
        for piece in p.pieces() {
            let undo = f.undo_of(*piece, false);
            assert!(calls.contains(&undo), "{step} fails: {piece:?} is left");
        }
    }
}

#[test]
fn a_rootless_rollback_unmounts_nothing_on_the_host() {
    use Piece::*;
    let pieces = [Cgroup, KeyClaim, Directory, ImageRoot, ControlSocket, Init];
    let f = Fixture::new(true);
    let p = progress(&pieces);
    f.build(&p);
    rollback(&f.state, &p);
    let mut expected = f.teardown(false, true);
    expected.push(HostCall::ReleaseKey(KEY.into(), ID.into()));
    assert_eq!(f.host.calls(), expected);
    for piece in p.pieces() {
        assert!(
            f.host.calls().contains(&f.undo_of(*piece, true)),
            "{piece:?} is left"
        );
    }
}

#[test]
fn a_create_that_built_nothing_of_its_own_undoes_nothing() {
    // No cgroups, no user namespace, no key: the pool made nothing the
    // sandbox owns, and the directory was never made.
    let f = Fixture::new(false);
    let p = Progress::new(ID);
    rollback(&f.state, &p);
    assert_eq!(f.host.calls(), Vec::new());
    assert!(!f.dir().exists());
}

#[test]
fn progress_keeps_each_piece_once_in_build_order() {
    let mut p = Progress::new(ID);
    p.built(Piece::Cgroup);
    p.claimed(KEY);
    p.built(Piece::Cgroup);
    p.built(Piece::Directory);
    assert_eq!(
        p.pieces(),
        [Piece::Cgroup, Piece::KeyClaim, Piece::Directory]
    );
    assert!(p.has(Piece::KeyClaim) && !p.has(Piece::Record));
    assert_eq!(p.id(), ID);
}
