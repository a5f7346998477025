//! `create` and `destroy`.
//!
//! `create` refuses what it cannot enforce and checks a snapshot's digest
//! before it allocates anything. It then makes, in order: the sandbox
//! directory, the key claim, `root/` (empty with `workspace/`, or unpacked
//! from the snapshot), and last `meta.json`, the commit point. Any failure
//! rolls back everything made so far. A crash before `meta.json` leaves a
//! half-created directory that `list`, `find` and `connect` never report and
//! that `destroy` removes.
//!
//! `destroy` releases the sandbox's key, renames its directory out of sight
//! (atomically, so nobody sees a half-removed sandbox, and no new command
//! can start in it), kills every host process the sandbox started — wherever
//! it went, whichever instance started it (see the `reap` module) — and
//! then removes the directory without following any symlink. The sweep of
//! what crashed processes left reaps the same way before it removes
//! anything.

use std::os::unix::fs::DirBuilderExt;

use corral_backend::{
    BackendError, Capabilities, CreateRequest, Network, PlatformError, Result, SandboxInfo,
    SnapshotError, WORKSPACE_DIR, check_enforceable, now_ms,
};

use crate::keys;
use crate::reap;
use crate::snapshot;
use crate::state::{
    Meta, NAME, SANDBOX_PREFIX, State, is_sandbox_id, random_hex, state_error, write_atomic,
};
use corral_backend::walk::remove_host_tree;

/// How many fresh ids are tried before giving up (a collision of 64 random
/// bits is not expected even once).
const ID_ATTEMPTS: usize = 4;

/// What a create has made so far, undone on drop unless committed.
struct Rollback<'a> {
    state: &'a State,
    id: String,
    committed: bool,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = keys::release(self.state, &self.id);
            let _ = remove_host_tree(&self.state.sandbox_dir(&self.id));
        }
    }
}

/// Validates a request against what the local backend can do.
pub(crate) fn check(caps: &Capabilities, req: &CreateRequest) -> Result<()> {
    req.validate()?;
    check_enforceable(NAME, caps, req)?;
    if req.image.is_some() {
        return Err(BackendError::unsupported(
            NAME,
            "start from an image (its sandboxes are directories on the host)",
        ));
    }
    if !req.ports.is_empty() && req.network == Network::None {
        return Err(BackendError::unsupported(
            NAME,
            "publish ports of a sandbox with network: none (its commands run in an \
             empty network namespace the host cannot reach)",
        ));
    }
    Ok(())
}

/// Creates a sandbox (blocking).
pub(crate) fn create(
    state: &State,
    caps: &Capabilities,
    req: CreateRequest,
) -> Result<SandboxInfo> {
    check(caps, &req)?;
    let from = match &req.snapshot {
        Some(snap_id) => Some(snapshot::open_verified(state, snap_id)?),
        None => None,
    };
    let id = allocate(state)?;
    let mut rollback = Rollback {
        state,
        id: id.clone(),
        committed: false,
    };
    if let Some(key) = &req.key {
        keys::claim(state, key, &id)?;
    }
    let root = state.root_dir(&id);
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&root)
        .map_err(|e| state_error(format_args!("creating sandbox {id}"), &e))?;
    let from_id = from.as_ref().map(|(info, _)| info.id.clone());
    if let Some((info, file)) = from {
        snapshot::unpack(&info.id, file, &root)?;
    }
    let workspace = root.join(WORKSPACE_DIR.trim_start_matches('/'));
    match std::fs::symlink_metadata(&workspace) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(SnapshotError::Corrupted {
                snapshot: from_id.unwrap_or_default(),
                why: format!("it holds a {WORKSPACE_DIR} that is not a directory"),
            }
            .into());
        }
        Err(_) => std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&workspace)
            .map_err(|e| state_error(format_args!("creating sandbox {id}"), &e))?,
    }
    let meta = Meta {
        id: id.clone(),
        key: req.key.clone(),
        labels: req.labels.clone(),
        created_at_ms: now_ms(),
        env: req.env.clone(),
        network_none: req.network == Network::None,
        ports: req.ports.clone(),
    };
    let json = serde_json::to_vec_pretty(&meta).map_err(|e| {
        BackendError::from(PlatformError::Defective {
            what: format!("encoding a record: {e}"),
        })
    })?;
    write_atomic(&state.meta_path(&id), &json)
        .map_err(|e| state_error(format_args!("recording sandbox {id}"), &e))?;
    rollback.committed = true;
    Ok(meta.info())
}

/// Makes a fresh sandbox directory (mode 0700: the record holds the
/// sandbox's environment) and returns its id.
fn allocate(state: &State) -> Result<String> {
    let mut last = None;
    for _ in 0..ID_ATTEMPTS {
        let hex = random_hex().map_err(|e| state_error("random", &e))?;
        let id = format!("{SANDBOX_PREFIX}{hex}");
        match std::fs::DirBuilder::new()
            .mode(0o700)
            .create(state.sandbox_dir(&id))
        {
            Ok(()) => return Ok(id),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(state_error("creating a sandbox", &e)),
        }
    }
    let e = last.unwrap_or_else(|| std::io::ErrorKind::AlreadyExists.into());
    Err(state_error("allocating a sandbox id", &e))
}

/// Destroys sandbox `id` (blocking); idempotent, and also removes a
/// half-created sandbox. Ids that are not well-formed name no sandbox.
pub(crate) fn destroy(state: &State, id: &str) -> Result<()> {
    if !is_sandbox_id(id) {
        return Ok(());
    }
    let dir = state.sandbox_dir(id);
    if std::fs::symlink_metadata(&dir).is_err() {
        // Gone already; a process an earlier destroy could not kill is
        // looked for again.
        return reap::reap(state, id);
    }
    keys::release(state, id)?;
    let hex = random_hex().map_err(|e| state_error("random", &e))?;
    let trash = state.sandboxes().join(format!(".trash-{id}-{hex}"));
    match std::fs::rename(&dir, &trash) {
        Ok(()) => {}
        // Destroyed concurrently.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return reap::reap(state, id),
        Err(e) => return Err(state_error(format_args!("destroying sandbox {id}"), &e)),
    }
    // Out of sight, so no new command starts in it; then nothing it started
    // outlives it. Were some process unkillable, the renamed directory stays
    // for the sweep to retry.
    reap::reap(state, id)?;
    remove_host_tree(&trash).map_err(|e| state_error(format_args!("removing sandbox {id}"), &e))
}

/// The sandbox id in the name of a directory a destroy renamed
/// (`.trash-<id>-<hex>`).
fn trashed_id(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(".trash-")?;
    let (id, _) = rest.rsplit_once('-')?;
    is_sandbox_id(id).then_some(id)
}

/// Removes what crashed processes left in the state directory: sandbox
/// directories without a record (creation never finished) and directories
/// of interrupted destroys, when untouched for at least `min_age` (so that a
/// create still running in another process is left alone), each after every
/// process of its sandbox is killed; and snapshot temporaries of
/// interrupted captures older than their grace. Returns the ids of the
/// half-created sandboxes removed.
pub(crate) fn sweep(state: &State, min_age: std::time::Duration) -> Result<Vec<String>> {
    crate::snapshot::sweep_temporaries(state, crate::snapshot::TEMPORARY_GRACE);
    let entries =
        std::fs::read_dir(state.sandboxes()).map_err(|e| state_error("listing sandboxes", &e))?;
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| state_error("listing sandboxes", &e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let old_enough = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= min_age);
        if !old_enough {
            continue;
        }
        if is_sandbox_id(&name) {
            if crate::state::read_meta(state, &name)?.is_none() {
                destroy(state, &name)?;
                removed.push(name);
            }
        } else if name.starts_with(".trash-") {
            if let Some(id) = trashed_id(&name) {
                reap::reap(state, id)?;
            }
            remove_host_tree(&entry.path())
                .map_err(|e| state_error("removing a destroyed sandbox", &e))?;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::trashed_id;

    #[test]
    fn trash_names_give_back_their_sandbox_id() {
        assert_eq!(
            trashed_id(".trash-loc-0123456789abcdef-00ff00ff00ff00ff"),
            Some("loc-0123456789abcdef")
        );
        assert_eq!(trashed_id(".trash-loc-0123456789abcdef"), None);
        assert_eq!(trashed_id(".trash-loc-../x-00ff00ff00ff00ff"), None);
        assert_eq!(trashed_id("loc-0123456789abcdef"), None);
    }
}
