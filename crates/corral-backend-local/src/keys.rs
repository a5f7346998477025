//! Exact key uniqueness across processes.
//!
//! A key is claimed by publishing the file `<state>/keys/<hex sha-256 of
//! key>`, holding the owning sandbox id, with `link(2)` from a temporary file
//! already holding the id. `link` fails with `EEXIST` when the name exists,
//! exactly like `O_CREAT | O_EXCL`, so of two processes racing for one key
//! exactly one wins; unlike a bare `O_EXCL` create, the claim is never seen
//! empty or half-written. The claim is removed when its sandbox is destroyed
//! (or its creation rolled back), and only by the sandbox it names.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use corral_backend::{CreateError, Result};
use sha2::{Digest, Sha256};

use crate::state::{State, random_hex, state_error, write_atomic};

/// The hex sha-256 of `key`: the claim's file name (keys may hold any
/// printable character, so they are never used as names themselves).
pub(crate) fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn claim_file(state: &State, hash: &str) -> PathBuf {
    state.keys().join(hash)
}

/// Claims `key` for sandbox `id`, recording the claim in the sandbox's own
/// directory first so that `destroy` can release it even if creation never
/// finished. `conflict` when another sandbox holds the key.
pub(crate) fn claim(state: &State, key: &str, id: &str) -> Result<()> {
    let hash = key_hash(key);
    write_atomic(&state.claim_path(id), hash.as_bytes())
        .map_err(|e| state_error(format_args!("recording the key of {id}"), &e))?;
    let keys = state.keys();
    let tmp = keys.join(format!(
        ".tmp-{}",
        random_hex().map_err(|e| state_error("random", &e))?
    ));
    let publish = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(id.as_bytes())?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, claim_file(state, &hash))
    })();
    let _ = std::fs::remove_file(&tmp);
    match publish {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let holder = owner_of_hash(state, &hash).ok().flatten();
            Err(CreateError::KeyTaken {
                key: key.into(),
                owner: holder,
            }
            .into())
        }
        Err(e) => Err(state_error(format_args!("claiming key {key:?}"), &e)),
    }
}

fn owner_of_hash(state: &State, hash: &str) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(claim_file(state, hash)) {
        Ok(id) => Ok(Some(id)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The id of the sandbox holding `key`, if any.
pub(crate) fn owner(state: &State, key: &str) -> Result<Option<String>> {
    owner_of_hash(state, &key_hash(key)).map_err(|e| state_error("reading a key claim", &e))
}

/// Releases the key claimed by sandbox `id`, if it claimed one and still
/// holds it. Missing pieces are not errors: this runs on half-created and
/// half-destroyed sandboxes too.
pub(crate) fn release(state: &State, id: &str) -> Result<()> {
    let hash = match std::fs::read_to_string(state.claim_path(id)) {
        Ok(h) => h,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(());
        }
        Err(e) => return Err(state_error(format_args!("reading the key of {id}"), &e)),
    };
    let hash = hash.trim();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    if owner_of_hash(state, hash).ok().flatten().as_deref() == Some(id) {
        match std::fs::remove_file(claim_file(state, hash)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(state_error(format_args!("releasing the key of {id}"), &e)),
        }
    }
    Ok(())
}
