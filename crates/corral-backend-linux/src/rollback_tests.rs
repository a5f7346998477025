//! A failed create's rollback, for each step made to fail: the exact
//! undo calls on a [`RecordingHost`], and that every piece built has the
//! call that reclaims it. No root: nothing is touched but a temporary
//! state directory.

use super::{Piece, Progress, rollback};
use crate::host::fixture::{Fixture, ID, KEY};
use crate::host::{HostCall, InitModel, RecordingHost};

/// An empty state directory; the create stopped its init before the
/// rollback.
fn fixture(rootless: bool) -> Fixture {
    Fixture::empty(RecordingHost::new(InitModel::Dead), rootless)
}

/// Makes on disk what `progress` says was built and teardown reads: the
/// directory and the record.
fn build(f: &Fixture, progress: &Progress) {
    if progress.has(Piece::Directory) {
        f.make_dir();
    }
    if progress.has(Piece::Record) {
        f.write_record();
    }
}

/// The progress of a create with `pieces` built (the key among them
/// when [`Piece::KeyClaim`] is).
fn progress(pieces: &[Piece]) -> Progress {
    let mut p = Progress::new(ID);
    for piece in pieces {
        match piece {
            Piece::KeyClaim => p.claimed(&KEY.try_into().unwrap()),
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
        let f = fixture(false);
        let p = progress(pieces);
        build(&f, &p);
        rollback(&f.state, &p);
        let mut expected = match p.has(Directory) {
            true => f.teardown(p.has(Record), false),
            false => vec![
                HostCall::RemoveCgroup(ID.into()),
                HostCall::ReleaseIdRange(ID.into()),
            ],
        };
        expected.push(f.key_release());
        let calls = f.host.calls();
        assert_eq!(calls, expected, "{step} fails");
        assert_eq!(calls, f.rollback_of(&p, false), "{step} fails");
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
    let f = fixture(true);
    let p = progress(&pieces);
    build(&f, &p);
    rollback(&f.state, &p);
    let mut expected = f.teardown(false, true);
    expected.push(f.key_release());
    assert_eq!(f.host.calls(), expected);
    assert_eq!(f.host.calls(), f.rollback_of(&p, true));
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
    let f = fixture(false);
    let p = Progress::new(ID);
    rollback(&f.state, &p);
    assert_eq!(f.host.calls(), Vec::new());
    assert!(!f.dir().exists());
}

#[test]
fn progress_keeps_each_piece_once_in_build_order() {
    let mut p = Progress::new(ID);
    p.built(Piece::Cgroup);
    p.claimed(&KEY.try_into().unwrap());
    p.built(Piece::Cgroup);
    p.built(Piece::Directory);
    assert_eq!(
        p.pieces(),
        [Piece::Cgroup, Piece::KeyClaim, Piece::Directory]
    );
    assert!(p.has(Piece::KeyClaim) && !p.has(Piece::Record));
    assert_eq!(p.id(), ID);
}
