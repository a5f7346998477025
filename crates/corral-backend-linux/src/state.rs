//! The linux backend's state directory and its records.
//!
//! ```text
//! <state>/linux/sandboxes/<id>/meta.json     the record, written last (the commit point)
//! <state>/linux/sandboxes/<id>/control.sock  PID 1's control socket
//! <state>/linux/sandboxes/<id>/disk.ext4    its disk image (sparse; size = disk limit)
//! <state>/linux/sandboxes/<id>/fs/           its writable layer: the image mounted (or a tmpfs)
//! <state>/linux/sandboxes/<id>/fs/root/      the sandbox's `/` (the overlay for layered images)
//! <state>/linux/sandboxes/<id>/fs/upper/     overlay upper dir (layered images)
//! <state>/linux/sandboxes/<id>/fs/work/      overlay work dir (layered images)
//! <state>/linux/sandboxes/<id>/paused        present while the sandbox is paused
//! <state>/linux/reaping/<id>/               a destroyed sandbox's directory, moved here
//!                                            whole for its reaper to finish (`crate::reaping`)
//! <state>/linux/keys/<hex sha-256 of key>    key claim holding the owning id
//! <state>/linux/images/                      the image store
//! <state>/linux/disk-templates/              empty disk images, one per size and host process
//! ```
//!
//! Everything a sandbox holds on the host is named by its id (`lnx-` and
//! 16 hex digits): its directory, its tmpfs mount, its cgroup, its
//! hostname. A sweep finds orphans from these names alone.
//!
//! Reading a record changes nothing: it reports what is there, an expired
//! or dead sandbox included ([`Condition`]). Tearing down is the work of
//! the operations that reclaim, all in [`crate::gc`] and
//! [`crate::destroy`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use corral_backend::host_process::{parent_pid, process_start};
pub use corral_backend::statefile::{random_hex, write_atomic};

pub use crate::record::{Meta, NAME, SANDBOX_PREFIX, is_sandbox_id};

use corral_backend::statefile::SandboxRecords;
use corral_backend::{BackendError, PlatformError, Result, SandboxInfo, SandboxStatus};
use sha2::Digest;

use crate::host::{Build, Host};

/// The name of a sandbox's writable layer's mount point in its directory
/// (and in its entry of `reaping/`, which is the same directory moved).
pub const FS_DIR: &str = "fs";

/// The layout of the backend's state directory.
#[derive(Debug, Clone)]
pub struct State {
    dir: PathBuf,
    /// The host's cgroup hierarchy, when corral can use it.
    pub cgroups: Option<crate::cgroup::Cgroups>,
    /// The image store (`<state>/linux/images`), when it opened.
    pub images: Option<crate::images::ImageStore>,
    /// The isolation layers applied (all of them, unless opened for measuring).
    pub layers: crate::layers::Layers,
    /// Whether the backend runs as an ordinary user ([`crate::privilege`]).
    pub rootless: bool,
    /// What every effect on the host of a teardown or a reclaim (and
    /// every look at its processes) goes through: the one [`State::open`]
    /// was given.
    pub host: Arc<dyn Host>,
    /// What every effect on the host of building a sandbox goes through:
    /// the same one.
    pub build: Arc<dyn Build>,
    /// The records as last read.
    metas: crate::meta_cache::MetaCache,
}

impl State {
    /// Opens (creating) `<state_dir>/linux` and its subdirectories; its
    /// effects on the host go through `host`.
    pub fn open<H: Host + Build + 'static>(
        state_dir: &Path,
        cgroups: Option<crate::cgroup::Cgroups>,
        host: Arc<H>,
    ) -> std::io::Result<Self> {
        // Absolute once, here: a reaper started from another working
        // directory (and gc's mount table, which names absolute paths)
        // must find the same entries.
        let state_dir = std::path::absolute(state_dir)?;
        let state_dir = state_dir.as_path();
        let mut state = State {
            dir: state_dir.join("linux"),
            cgroups,
            images: None,
            layers: crate::layers::Layers::all(),
            rootless: crate::privilege::rootless(),
            host: host.clone(),
            build: host,
            metas: crate::meta_cache::MetaCache::default(),
        };
        std::fs::create_dir_all(state.sandboxes())?;
        std::fs::create_dir_all(state.reaping())?;
        std::fs::create_dir_all(state.keys())?;
        state.images = crate::images::ImageStore::open(crate::images::store_dir(state_dir)).ok();
        Ok(state)
    }

    /// `<state>/linux`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where sandboxes live.
    pub fn sandboxes(&self) -> PathBuf {
        self.dir.join("sandboxes")
    }

    /// Where destroyed sandboxes wait for their reaper
    /// (`crate::reaping`): beside [`Self::sandboxes`], on the same file
    /// system, so that a sandbox's directory moves here in one rename.
    pub fn reaping(&self) -> PathBuf {
        self.dir.join("reaping")
    }

    /// The entry of destroyed sandbox `id` in [`Self::reaping`].
    pub fn reaping_entry(&self, id: &str) -> PathBuf {
        self.reaping().join(id)
    }

    /// Where key claims live.
    pub fn keys(&self) -> PathBuf {
        self.dir.join("keys")
    }

    /// The directory of sandbox `id`.
    pub fn sandbox_dir(&self, id: &str) -> PathBuf {
        self.sandboxes().join(id)
    }

    /// The tmpfs mount point of sandbox `id`.
    pub fn fs_dir(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join(FS_DIR)
    }

    /// The host directory behind the sandbox's `/`.
    pub fn root_dir(&self, id: &str) -> PathBuf {
        self.fs_dir(id).join("root")
    }

    /// Connects to PID 1's control socket of sandbox `id`.
    pub fn connect_control(&self, id: &str) -> std::io::Result<std::os::unix::net::UnixStream> {
        connect_control_in(&self.sandbox_dir(id))
    }

    /// The record of sandbox `id`.
    pub fn meta_path(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join("meta.json")
    }

    /// The marker of a paused sandbox `id`: present from the freeze of its
    /// cgroup until the thaw.
    pub fn paused_marker(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join("paused")
    }

    /// The claim file of `key`.
    pub fn key_path(&self, key: &str) -> PathBuf {
        self.keys()
            .join(hex::encode(sha2::Sha256::digest(key.as_bytes())))
    }

    /// Whether this backend runs commands as the sandbox's user: not
    /// rootless, where the sandbox's ids may be root's alone (the single
    /// map `0 <uid> 1`, uid 1000 unmapped; it is mapped only with
    /// subordinate ranges, which are not known before a sandbox's
    /// namespace is mapped).
    pub fn runs_as_user(&self) -> bool {
        !self.rootless
    }

    /// [`corral_backend::check_run_as`] for this backend's declaration
    /// here (of which the check reads `run_as_user` alone).
    pub fn check_run_as(&self, run_as: Option<corral_backend::RunAs>) -> Result<()> {
        let caps = corral_backend::Capabilities {
            run_as_user: self.runs_as_user(),
            ..corral_backend::Capabilities::default()
        };
        corral_backend::check_run_as(crate::record::NAME, &caps, run_as)
    }
}

/// The longest socket path used as is (`sun_path` holds 108 bytes).
const MAX_SOCKET_PATH: usize = 100;

/// Runs `f` on the path of `dir/control.sock`, or — when that is too long
/// for a unix socket address — on the same file reached through a
/// descriptor of `dir` (`/proc/self/fd/<n>/control.sock`).
fn with_short_path<T>(
    dir: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let full = dir.join("control.sock");
    if full.as_os_str().len() <= MAX_SOCKET_PATH {
        return f(&full);
    }
    let fd = rustix::fs::open(
        dir,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    use std::os::fd::AsRawFd;
    f(Path::new(&format!(
        "/proc/self/fd/{}/control.sock",
        fd.as_raw_fd()
    )))
}

/// Binds PID 1's control socket of the sandbox in `dir`.
pub fn bind_control_in(dir: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    with_short_path(dir, |p| std::os::unix::net::UnixListener::bind(p))
}

/// Connects to PID 1's control socket of the sandbox in `dir`.
pub fn connect_control_in(dir: &Path) -> std::io::Result<std::os::unix::net::UnixStream> {
    with_short_path(dir, |p| std::os::unix::net::UnixStream::connect(p))
}

/// An error of the state directory, naming what was being done.
pub fn state_error(what: impl std::fmt::Display, err: &std::io::Error) -> BackendError {
    PlatformError::io(format_args!("linux state: {what}"), err).into()
}

/// The records of the sandboxes of `state`.
fn records(state: &State) -> SandboxRecords {
    SandboxRecords {
        backend: NAME,
        prefix: SANDBOX_PREFIX,
        dir: state.sandboxes(),
        state_error: |what, err| state_error(what, err),
    }
}

/// The record of sandbox `id`; `None` when there is none (or it is half-made).
/// Read from disk only when its file changed since the last read
/// ([`crate::meta_cache`]).
pub fn read_meta(state: &State, id: &str) -> Result<Option<Meta>> {
    if !is_sandbox_id(id) {
        return Ok(None);
    }
    state
        .metas
        .get(id, &state.meta_path(id), || records(state).read(id))
}

/// What a sandbox is at one instant, as its record and the host say.
/// Reading it changes nothing; what is not live is left for the operations
/// that reclaim ([`crate::gc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Its PID 1 runs: commands may be executed.
    Running,
    /// Its PID 1 runs, frozen by `pause` until `resume`.
    Paused,
    /// Its PID 1 is gone before its lifetime ended (killed from outside or
    /// by the OOM killer): listed `dead` until `destroy` or `gc`.
    Dead,
    /// Its lifetime is over (its PID 1 ended everything at the deadline):
    /// gone to every caller, who sees `not_found`, until `destroy`, `gc`
    /// or a create with its key reclaims what it still holds.
    Expired,
}

impl Condition {
    /// Whether the sandbox is live: gc spares it.
    pub fn is_live(self) -> bool {
        match self {
            Condition::Running | Condition::Paused => true,
            Condition::Dead | Condition::Expired => false,
        }
    }

    /// The status callers see; `None` for an expired sandbox, which is gone
    /// to them.
    pub fn status(self) -> Option<SandboxStatus> {
        match self {
            Condition::Running => Some(SandboxStatus::Running),
            Condition::Paused => Some(SandboxStatus::Paused),
            Condition::Dead => Some(SandboxStatus::Dead),
            Condition::Expired => None,
        }
    }
}

/// Whether the PID 1 of `meta` still runs, as the host of `state` tells:
/// the pid with the recorded start time (a reused pid is another process).
pub fn init_alive(state: &State, meta: &Meta) -> bool {
    state.host.process_start(meta.init_pid) == Some(meta.init_start)
}

/// The condition of the sandbox of `meta`, now.
pub fn condition(state: &State, meta: &Meta) -> Condition {
    if meta.expired_at(corral_backend::now_ms()) {
        Condition::Expired
    } else if !init_alive(state, meta) {
        Condition::Dead
    } else if is_paused(state, &meta.id) {
        Condition::Paused
    } else {
        Condition::Running
    }
}

/// Whether sandbox `id` is paused (its marker is there).
pub fn is_paused(state: &State, id: &str) -> bool {
    state.paused_marker(id).exists()
}

/// The record of `meta` as the `Backend` trait reports it, with its status
/// now; `None` once it expired.
pub fn info_of(state: &State, meta: &Meta) -> Option<SandboxInfo> {
    let status = condition(state, meta).status()?;
    Some(SandboxInfo {
        status,
        ..meta.info()
    })
}

/// The record of sandbox `id` unless its lifetime is over: an expired
/// sandbox is gone to callers (and left as it is for `gc`).
fn unexpired_meta(state: &State, id: &str) -> Result<Option<Meta>> {
    let now = corral_backend::now_ms();
    Ok(read_meta(state, id)?.filter(|meta| !meta.expired_at(now)))
}

/// The record of unexpired sandbox `id`, or `not_found`.
pub fn require_meta(state: &State, id: &str) -> Result<Meta> {
    unexpired_meta(state, id)?.ok_or_else(|| BackendError::sandbox_not_found(id))
}

/// Every completely created, unexpired sandbox, oldest first.
pub fn list_metas(state: &State) -> Result<Vec<Meta>> {
    records(state).list(|id| unexpired_meta(state, id))
}

/// Whether `path` was last modified at least `age` ago (`false` when it
/// is gone).
pub fn older_than(path: &Path, age: std::time::Duration) -> bool {
    std::fs::symlink_metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|a| a >= age)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::{ErrorCode, Labels};

    #[test]
    fn ids_are_strict() {
        assert!(is_sandbox_id("lnx-0123456789abcdef"));
        assert!(!is_sandbox_id("lnx-0123456789ABCDEF"));
        assert!(!is_sandbox_id("lnx-../../etc/passwd"));
        assert!(!is_sandbox_id("never-existed"));
        assert!(is_sandbox_id(&format!(
            "{SANDBOX_PREFIX}{}",
            random_hex().unwrap()
        )));
    }

    /// What a record reads as, by its lifetime, its PID 1 and its pause
    /// marker — and that reading it leaves everything as it was.
    ///
    /// | lifetime | PID 1  | paused | condition | status callers see |
    /// |----------|--------|--------|-----------|--------------------|
    /// | none     | runs   | no     | running   | running            |
    /// | future   | runs   | yes    | paused    | paused             |
    /// | future   | gone   | no     | dead      | dead               |
    /// | over     | runs   | no     | expired   | none (not found)   |
    /// | over     | gone   | yes    | expired   | none (not found)   |
    #[test]
    fn a_record_reads_as_its_condition_and_reading_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(dir.path(), None, Arc::new(crate::real_host::RealHost)).unwrap();
        let me = std::process::id();
        let alive = (me, process_start(me).unwrap());
        let gone = (me, alive.1 + 1);
        let now = corral_backend::now_ms();
        let (future, over) = (Some(now + 3_600_000), Some(now.saturating_sub(1)));
        let rows = [
            (None, alive, false, Condition::Running),
            (future, alive, true, Condition::Paused),
            (future, gone, false, Condition::Dead),
            (over, alive, false, Condition::Expired),
            (over, gone, true, Condition::Expired),
        ];
        for (n, (expires_at_ms, (init_pid, init_start), paused, want)) in
            rows.into_iter().enumerate()
        {
            let id = format!("lnx-{n:016x}");
            std::fs::create_dir_all(state.sandbox_dir(&id)).unwrap();
            if paused {
                std::fs::write(state.paused_marker(&id), b"").unwrap();
            }
            let meta = Meta {
                id: id.clone(),
                key: None,
                labels: Labels::new(),
                created_at_ms: now,
                env: corral_backend::Environment::new(),
                network_none: true,
                init_pid,
                init_start,
                disk_bytes: 1,
                disk_layer: crate::record::DiskLayer::default(),
                disk_fallback: None,
                image: String::new(),
                expires_at_ms,
            };
            write_atomic(&state.meta_path(&id), &serde_json::to_vec(&meta).unwrap()).unwrap();
            assert_eq!(condition(&state, &meta), want, "row {n}");
            let info = info_of(&state, &meta);
            assert_eq!(info.map(|i| i.status), want.status(), "row {n}");
            let required = require_meta(&state, &id);
            let listed = list_metas(&state).unwrap().iter().any(|m| m.id == id);
            if want == Condition::Expired {
                assert_eq!(required.unwrap_err().code(), ErrorCode::NotFound, "row {n}");
                assert!(!listed, "row {n}: an expired sandbox is not listed");
            } else {
                assert_eq!(required.unwrap().id, id, "row {n}");
                assert!(listed, "row {n}");
            }
            assert!(state.meta_path(&id).is_file(), "row {n}: the record stays");
            assert_eq!(state.paused_marker(&id).exists(), paused, "row {n}");
            assert!(read_meta(&state, &id).unwrap().is_some(), "row {n}");
        }
    }

    #[test]
    fn start_time_of_self_and_of_nothing() {
        assert!(process_start(std::process::id()).is_some());
        assert!(process_start(u32::MAX).is_none());
    }

    #[test]
    fn parent_of_self_and_of_nothing() {
        assert_eq!(
            parent_pid(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        assert!(parent_pid(u32::MAX).is_none());
    }
}
