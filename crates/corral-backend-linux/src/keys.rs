//! Key claims: what makes this backend's `keyMode` `exact` (SDK spec, the
//! contract table: "`\"exact\"` if the service enforces unique names").
//!
//! A claim is one file under `<state>/keys/`, named by the SHA-256 of the
//! key ([`State::key_path`]) and holding the id of the sandbox that owns
//! the key. A create claims its key just before it makes the sandbox's
//! directory, destroy releases it, and gc removes abandoned claims. Whether
//! a claim is held, in flight or abandoned is decided in one place,
//! [`holder`], for the create that meets it and for gc alike.

use std::path::Path;
use std::time::Duration;

use corral_backend::{CreateError, Result};

use crate::state::{State, is_sandbox_id, older_than, state_error};

/// How old a claim whose sandbox directory does not exist must be to count
/// as abandoned: younger, it is a create in flight (which claims its key
/// just before making its directory).
pub const GRACE: Duration = Duration::from_secs(10);

/// Who holds a claim.
#[derive(Debug, PartialEq, Eq)]
enum Holder {
    /// The sandbox with this id, whose directory exists.
    Sandbox(String),
    /// A create that made the claim less than [`GRACE`] ago and has not
    /// made its directory yet.
    InFlight,
    /// Nobody: the claim names no existing sandbox and is older than
    /// [`GRACE`] (or unreadable and as old).
    Abandoned,
}

/// Who holds the claim at `path`.
fn holder(state: &State, path: &Path) -> Holder {
    let owner = std::fs::read_to_string(path).unwrap_or_default();
    if is_sandbox_id(&owner) && state.sandbox_dir(&owner).exists() {
        Holder::Sandbox(owner)
    } else if older_than(path, GRACE) {
        Holder::Abandoned
    } else {
        Holder::InFlight
    }
}

/// The sandbox that holds `key`, when one with a directory does (a live,
/// dead or expired one alike: which it is, is for the caller to judge).
pub(crate) fn holder_of(state: &State, key: &str) -> Option<String> {
    match holder(state, &state.key_path(key)) {
        Holder::Sandbox(id) => Some(id),
        Holder::InFlight | Holder::Abandoned => None,
    }
}

/// Claims `key` for sandbox `id`: `conflict` while another sandbox or a
/// create in flight holds it; an abandoned claim is taken over. The claim
/// is written whole under a name of its own and then hard-linked into
/// place, so that a racing claimer never reads a claim without its owner —
/// an empty claim once looked abandoned, and two racing creates with one
/// key both went ahead.
pub(crate) fn claim(state: &State, key: &str, id: &str) -> Result<()> {
    let whole = state.keys().join(format!(".claim-{id}"));
    std::fs::write(&whole, id).map_err(|e| state_error("writing the key claim", &e))?;
    let claimed = link(state, key, &whole);
    let _ = std::fs::remove_file(&whole);
    claimed
}

/// Links the whole claim `whole` into place as `key`'s (see [`claim`]).
fn link(state: &State, key: &str, whole: &Path) -> Result<()> {
    let path = state.key_path(key);
    for _ in 0..2 {
        match std::fs::hard_link(whole, &path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match holder(state, &path) {
                Holder::Sandbox(owner) => {
                    return Err(CreateError::KeyTaken {
                        key: key.into(),
                        owner: Some(owner),
                    }
                    .into());
                }
                Holder::InFlight => {
                    return Err(CreateError::KeyBeingClaimed { key: key.into() }.into());
                }
                Holder::Abandoned => {
                    let _ = std::fs::remove_file(&path);
                }
            },
            Err(e) => return Err(state_error("claiming the key", &e)),
        }
    }
    Err(CreateError::KeyBeingClaimed { key: key.into() }.into())
}

/// Releases the claim in file `claim` (a key's [`State::key_path`]) when
/// sandbox `id` holds it.
pub(crate) fn release(claim: &Path, id: &str) {
    if std::fs::read_to_string(claim).is_ok_and(|owner| owner == id) {
        let _ = std::fs::remove_file(claim);
    }
}

/// Removes the abandoned claims (and the whole claims a crashed create left
/// before linking one into place); returns how many.
pub(crate) fn sweep(state: &State) -> usize {
    let Ok(entries) = std::fs::read_dir(state.keys()) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|path| holder(state, path) == Holder::Abandoned)
        .filter(|path| std::fs::remove_file(path).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::ErrorCode;

    const A: &str = "lnx-00000000000000aa";
    const B: &str = "lnx-00000000000000bb";

    fn state() -> (tempfile::TempDir, State) {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(
            dir.path(),
            None,
            std::sync::Arc::new(crate::real_host::RealHost),
        )
        .unwrap();
        (dir, state)
    }

    /// Makes the claim at `path` look `age` old.
    fn age(path: &Path, age: Duration) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(std::time::SystemTime::now() - age).unwrap();
    }

    /// The claim of `key` as `claim` by another sandbox meets it — the
    /// rule [`holder`] decides for create and gc alike.
    ///
    /// | claim on disk                               | `claim` by B           |
    /// |---------------------------------------------|------------------------|
    /// | none                                        | taken, holds B         |
    /// | A's, A's directory exists                   | conflict: held by A    |
    /// | A's, no directory yet, fresh                | conflict: in progress  |
    /// | empty, fresh (a claim being written)        | conflict: in progress  |
    /// | A's, no directory, older than [`GRACE`]     | taken over, holds B    |
    /// | garbage, older than [`GRACE`]               | taken over, holds B    |
    #[test]
    fn a_key_claim_is_taken_only_when_free_or_abandoned() {
        let old = GRACE + Duration::from_secs(5);
        type Setup = fn(&State, &Path, Duration);
        let rows: [(&str, Setup, Option<&str>); 6] = [
            ("none", |_, _, _| {}, None),
            (
                "held by a live sandbox",
                |s, p, _| {
                    std::fs::write(p, A).unwrap();
                    std::fs::create_dir_all(s.sandbox_dir(A)).unwrap();
                },
                Some("is held by sandbox lnx-00000000000000aa"),
            ),
            (
                "a create in flight",
                |_, p, _| std::fs::write(p, A).unwrap(),
                Some("a create in progress"),
            ),
            (
                "a claim being written",
                |_, p, _| std::fs::write(p, "").unwrap(),
                Some("a create in progress"),
            ),
            (
                "abandoned",
                |_, p, old| {
                    std::fs::write(p, A).unwrap();
                    age(p, old);
                },
                None,
            ),
            (
                "garbage, abandoned",
                |_, p, old| {
                    std::fs::write(p, "not an id").unwrap();
                    age(p, old);
                },
                None,
            ),
        ];
        for (row, setup, refused) in rows {
            let (_dir, state) = state();
            let path = state.key_path("k");
            setup(&state, &path, old);
            let got = claim(&state, "k", B);
            match refused {
                None => {
                    got.unwrap_or_else(|e| panic!("{row}: {e}"));
                    assert_eq!(std::fs::read_to_string(&path).unwrap(), B, "{row}");
                }
                Some(why) => {
                    let e = got.expect_err(row);
                    assert_eq!(e.code(), ErrorCode::Conflict, "{row}");
                    assert!(e.message().contains(why), "{row}: {}", e.message());
                }
            }
            let left: Vec<_> = std::fs::read_dir(state.keys())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(".claim-"))
                .collect();
            assert!(left.is_empty(), "{row}: the whole claim is not left behind");
        }
    }

    /// SDK spec, the contract table: `keyMode` is "`\"exact\"` if the
    /// service enforces unique names". Racing claims of one key: exactly
    /// one is taken, every other is `conflict`.
    #[test]
    fn racing_claims_of_one_key_take_it_once() {
        let (_dir, state) = state();
        let state = std::sync::Arc::new(state);
        let claims: Vec<_> = (0..16u8)
            .map(|n| {
                let state = std::sync::Arc::clone(&state);
                std::thread::spawn(move || claim(&state, "k", &format!("lnx-{n:016x}")))
            })
            .collect();
        let outcomes: Vec<_> = claims.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            outcomes.iter().filter(|o| o.is_ok()).count(),
            1,
            "{outcomes:?}"
        );
        for e in outcomes.iter().filter_map(|o| o.as_ref().err()) {
            assert_eq!(e.code(), ErrorCode::Conflict, "{e}");
        }
    }

    /// gc's sweep removes exactly the abandoned claims (and a whole claim a
    /// crashed create left), and `release` removes only the owner's.
    #[test]
    fn sweep_removes_abandoned_claims_and_release_only_the_owners() {
        let (_dir, state) = state();
        let old = GRACE + Duration::from_secs(5);
        let held = state.key_path("held");
        std::fs::write(&held, A).unwrap();
        std::fs::create_dir_all(state.sandbox_dir(A)).unwrap();
        age(&held, old);
        let in_flight = state.key_path("in-flight");
        std::fs::write(&in_flight, B).unwrap();
        let abandoned = state.key_path("abandoned");
        std::fs::write(&abandoned, B).unwrap();
        age(&abandoned, old);
        let crashed = state.keys().join(format!(".claim-{B}"));
        std::fs::write(&crashed, B).unwrap();
        age(&crashed, old);
        assert_eq!(sweep(&state), 2);
        assert!(held.exists() && in_flight.exists());
        assert!(!abandoned.exists() && !crashed.exists());
        release(&state.key_path("held"), B);
        assert!(held.exists(), "B does not hold it");
        release(&state.key_path("held"), A);
        assert!(!held.exists(), "A released its own");
    }
}
