//! A failed create's rollback: what it built so far, as a list of
//! [`Piece`]s kept while it builds ([`Progress`]), undone by [`rollback`]
//! through the state's [`crate::host::Host`], so that its order is tested
//! without root (`rollback_tests.rs`).
//!
//! The waiting init is this process's own child: the create stops it
//! (`Started::stop`) before the rollback, so that nothing of the sandbox
//! runs while its pieces are removed.

use crate::destroy;
use crate::state::State;

/// One piece of a sandbox a create builds, in the order it builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Piece {
    /// The sandbox's cgroup, made by the pool with its init.
    Cgroup,
    /// The sandbox's user-id range, claimed by the pool with its init.
    IdRange,
    /// The claim of the request's key.
    KeyClaim,
    /// The sandbox directory (with its `creator` file and mount point).
    Directory,
    /// The writable layer mounted on the host.
    WritableLayer,
    /// The sandbox root: the image's overlay or binds, its skeleton.
    ImageRoot,
    /// PID 1's control socket, in the directory.
    ControlSocket,
    /// PID 1 running the sandbox (no longer only waiting).
    Init,
    /// The sandbox's network (veth, firewall rules).
    Network,
    /// The preview ports published for it.
    Previews,
    /// Its record: from here on it is listed.
    Record,
}

/// What a create has built so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    id: String,
    key: Option<corral_backend::SandboxKey>,
    built: Vec<Piece>,
}

impl Progress {
    /// Nothing built yet of sandbox `id`.
    pub fn new(id: &str) -> Self {
        Progress {
            id: id.to_string(),
            key: None,
            built: Vec::new(),
        }
    }

    /// The sandbox's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `piece` is built.
    pub fn built(&mut self, piece: Piece) {
        if !self.has(piece) {
            self.built.push(piece);
        }
    }

    /// `key` is claimed for the sandbox.
    pub fn claimed(&mut self, key: &corral_backend::SandboxKey) {
        self.key = Some(key.clone());
        self.built(Piece::KeyClaim);
    }

    /// Whether `piece` is built.
    pub fn has(&self, piece: Piece) -> bool {
        self.pieces().contains(&piece)
    }

    /// The pieces built, in the order they were.
    pub fn pieces(&self) -> &[Piece] {
        &self.built
    }
}

/// Undoes what `progress` says was built (blocking, best effort: a
/// failure leaves the piece to [`crate::gc`]). Once the directory exists,
/// the sandbox's one teardown ([`destroy::teardown`]) removes everything
/// held in it or named by it, its cgroup and id range included; before
/// that, the cgroup and id range the pool made are released here. The key
/// claim is never teardown's: it is released last, whatever was built.
pub fn rollback(state: &State, progress: &Progress) {
    let host = state.host.as_ref();
    let id = progress.id();
    let dir = progress.has(Piece::Directory);
    if dir {
        let _ = destroy::teardown(state, id);
    }
    if progress.has(Piece::Cgroup) && !dir {
        let _ = host.remove_cgroup(state.cgroups.as_ref(), id);
    }
    if progress.has(Piece::IdRange) && !dir {
        host.release_id_range(&crate::userns::ranges::dir(state.dir()), id);
    }
    if let Some(key) = &progress.key {
        host.release_key(&state.key_path(key), id);
    }
}

#[cfg(test)]
#[path = "rollback_tests.rs"]
mod tests;
