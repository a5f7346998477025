//! `gc`: reclaims every piece of host state that crashed processes left —
//! sandbox directories, the writable-layer and overlay mounts under them
//! (a detached ext4 layer frees its loop device by itself), disk templates
//! of host processes that are gone, `lnx-`
//! cgroups, orphaned `corral-init` processes (whose death takes their
//! network namespace and veth with it), control sockets, host firewall
//! tables of allowlisted sandboxes and stale key claims — and never touches
//! a live sandbox.
//!
//! How liveness is proven (a sandbox is spared when either holds):
//!
//! - **complete** (its `meta.json` exists): PID 1 is alive with the start
//!   time recorded next to its pid. A pid is never reused with the same
//!   start time, and a paused sandbox's PID 1 (frozen, so it cannot answer
//!   on its control socket) is alive by this test too. An expired one is
//!   torn down, as on any other first sight.
//! - **half-made** (no record yet): the process creating it is alive — its
//!   pid and start time are in the `creator` file written right after the
//!   directory. A directory without that file (a crash in the instant
//!   between the two) is reclaimed once older than [`NO_CREATOR_GRACE`].
//!
//! An init whose creator dies before the record is committed ends its
//! sandbox by itself (see `crate::init`), and so does one still waiting in
//! a pool. Beyond that, processes are found by what they are: a
//! `corral-init` in the cgroup named by a sandbox with a directory here
//! belongs to that sandbox, and is killed only when it is not live. Cgroups
//! are shared by every state directory of the same parent, so one with no
//! directory here is removed only when empty and older than
//! [`CGROUP_GRACE`] (a live sandbox always holds its init; a create makes
//! its cgroup just before starting it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use corral_backend::Result;
use serde::Serialize;

use crate::state::{
    State, host_pids, is_sandbox_id, kill_all, process_start, read_meta, state_error,
};

/// The file holding `<pid> <start time>` of the process creating a sandbox.
const CREATOR_FILE: &str = "creator";
/// How old a sandbox directory without a `creator` file must be to be reclaimed.
pub const NO_CREATOR_GRACE: Duration = Duration::from_secs(2);
/// How old an empty sandbox cgroup with no directory here must be to be removed.
pub const CGROUP_GRACE: Duration = Duration::from_secs(10);
/// How long killed init processes get to disappear.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// What one `gc` pass reclaimed and what it spared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Sandboxes (directories and everything they held) reclaimed.
    pub sandboxes: Vec<String>,
    /// Live sandboxes left alone.
    pub spared: Vec<String>,
    /// Orphaned `corral-init` processes killed.
    pub processes_killed: usize,
    /// Mounts under the state directory detached outside a sandbox teardown.
    pub mounts_detached: usize,
    /// Sandbox cgroups with no directory here removed.
    pub cgroups: Vec<String>,
    /// Stale key claims removed.
    pub key_claims: usize,
    /// Host firewall tables of allowlisted sandboxes whose link is gone.
    pub tables: Vec<String>,
    /// Half-built snapshots (`snapshots/.tmp-*`) a crashed capture left.
    pub snapshot_temporaries: usize,
    /// Sandboxes that could not be reclaimed, one line each (the pass goes
    /// on with the others; a next pass retries them).
    pub errors: Vec<String>,
}

impl GcReport {
    /// Whether nothing was reclaimed and nothing failed.
    pub fn is_empty(&self) -> bool {
        self.sandboxes.is_empty()
            && self.processes_killed == 0
            && self.mounts_detached == 0
            && self.cgroups.is_empty()
            && self.key_claims == 0
            && self.tables.is_empty()
            && self.snapshot_temporaries == 0
            && self.errors.is_empty()
    }
}

/// Records this process as the creator of sandbox `id` (best effort: a
/// missing file only delays the reclaim by [`NO_CREATOR_GRACE`]).
pub(crate) fn mark_creator(state: &State, id: &str) {
    let me = std::process::id();
    if let Some(start) = process_start(me) {
        // Atomic, like every record: a creator killed mid-write must leave
        // no file or a whole one, never a torn one that reads as "no creator".
        let _ = corral_backend::statefile::write_atomic_unsynced(
            &state.sandbox_dir(id).join(CREATOR_FILE),
            format!("{me} {start}").as_bytes(),
        );
    }
}

/// Whether the process that created half-made sandbox `id` still runs;
/// `None` when no creator was recorded.
fn creator_alive(state: &State, id: &str) -> Option<bool> {
    let text = std::fs::read_to_string(state.sandbox_dir(id).join(CREATOR_FILE)).ok()?;
    let mut parts = text.split_whitespace();
    let pid: u32 = parts.next()?.parse().ok()?;
    let start: u64 = parts.next()?.parse().ok()?;
    Some(process_start(pid) == Some(start))
}

/// Whether sandbox `id` (its directory exists) is live; see the module docs.
fn is_live(state: &State, id: &str) -> bool {
    if let Ok(Some(meta)) = read_meta(state, id) {
        let expired = meta
            .expires_at_ms
            .is_some_and(|t| corral_backend::now_ms() >= t);
        return !expired && process_start(meta.init_pid) == Some(meta.init_start);
    }
    match creator_alive(state, id) {
        Some(alive) => alive,
        None => !older_than(&state.sandbox_dir(id), NO_CREATOR_GRACE),
    }
}

/// One `corral-init` process of this state directory.
#[derive(Debug, Clone)]
struct InitProcess {
    pid: u32,
    start: u64,
    sandbox: String,
}

/// Every `corral-init` process in the cgroup of a sandbox with a directory
/// under `sandboxes` (its command line names nothing: the sandbox id is the
/// last component of its cgroup path).
fn init_processes(sandboxes: &Path) -> Vec<InitProcess> {
    let mut out = Vec::new();
    for pid in host_pids() {
        let is_init = std::fs::read(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim_ascii_end() == b"corral-init");
        if !is_init {
            continue;
        }
        let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            continue;
        };
        let sandbox = cgroups
            .lines()
            .filter_map(|line| line.rsplit('/').next())
            .find(|name| is_sandbox_id(name) && sandboxes.join(name).is_dir())
            .map(str::to_owned);
        if let (Some(sandbox), Some(start)) = (sandbox, process_start(pid)) {
            out.push(InitProcess {
                pid,
                start,
                sandbox,
            });
        }
    }
    out
}

/// Mount points under `sandboxes`, deepest first, with the sandbox each
/// belongs to.
fn mounts_under(sandboxes: &Path) -> Vec<(String, PathBuf)> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .filter_map(|p| {
            let id = p
                .strip_prefix(sandboxes)
                .ok()?
                .components()
                .next()?
                .as_os_str()
                .to_str()?
                .to_owned();
            is_sandbox_id(&id).then_some((id, p))
        })
        .collect();
    out.sort_by_key(|(_, p)| std::cmp::Reverse(p.components().count()));
    out.dedup();
    out
}

/// Undoes mountinfo's octal escapes (`\040` for a space and so on).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `path` was last modified at least `age` ago.
pub(crate) fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|a| a >= age)
}

/// The sandbox ids with a directory in this state directory.
fn sandbox_dirs(state: &State) -> Result<Vec<String>> {
    let entries =
        std::fs::read_dir(state.sandboxes()).map_err(|e| state_error("listing sandboxes", &e))?;
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| is_sandbox_id(n))
        .collect();
    ids.sort();
    Ok(ids)
}

/// One pass of garbage collection over `state` (blocking). Idempotent: a
/// second pass right after finds nothing.
pub(crate) fn gc(state: &State) -> Result<GcReport> {
    let mut report = GcReport::default();
    let sandboxes = state.sandboxes();
    let mut live = BTreeSet::new();
    let mut dead = BTreeSet::new();
    for id in sandbox_dirs(state)? {
        if is_live(state, &id) {
            live.insert(id);
        } else {
            dead.insert(id);
        }
    }
    // Inits first: a dead sandbox's init may still run (a creator killed
    // after the start, before the record), and so may inits whose
    // directory is already gone.
    let inits = init_processes(&sandboxes);
    let orphans: Vec<&InitProcess> = inits
        .iter()
        .filter(|p| !live.contains(&p.sandbox))
        .filter(|p| dead.contains(&p.sandbox) || !state.sandbox_dir(&p.sandbox).exists())
        .collect();
    // A frozen process does not die of SIGKILL until thawed.
    for p in &orphans {
        crate::pause::thaw_quietly(state, &p.sandbox);
    }
    let orphans: Vec<(u32, u64)> = orphans.iter().map(|p| (p.pid, p.start)).collect();
    report.processes_killed = kill_all(&orphans, KILL_WAIT);
    for id in &dead {
        reclaim(state, id, &mut report);
    }
    // Preview forwarders whose sandbox is gone (each also exits by itself
    // when its sandbox's PID 1 does).
    report.processes_killed += crate::preview::sweep(&sandboxes, &live);
    // Sandboxes that appeared since the listing are judged afresh: a create
    // running elsewhere is live by its creator.
    let stale = |id: &String| dead.contains(id) || (!live.contains(id) && !is_live(state, id));
    for (id, path) in mounts_under(&sandboxes) {
        if stale(&id) && crate::rootfs::unmount_all(&path).is_ok() {
            report.mounts_detached += 1;
        }
    }
    // What a detached mount kept alive: remove what is left of it.
    let leftovers: Vec<String> = sandbox_dirs(state)?
        .into_iter()
        .filter(|id| !dead.contains(id) && stale(id))
        .collect();
    for id in leftovers {
        if dead.insert(id.clone()) {
            reclaim(state, &id, &mut report);
        }
    }
    if let Some(cgroups) = &state.cgroups
        && let Ok(names) = cgroups.list()
    {
        for name in names {
            if is_sandbox_id(&name)
                && !live.contains(&name)
                && std::fs::symlink_metadata(state.sandbox_dir(&name)).is_err()
                && let Ok(Some(cg)) = cgroups.open(&name)
                && cg.pids().is_ok_and(|p| p.is_empty())
                && older_than(cg.dir(), CGROUP_GRACE)
                && cg.destroy().is_ok()
            {
                report.cgroups.push(name);
            }
        }
    }
    crate::disk::image::sweep(&crate::disk::templates_dir(state));
    report.key_claims = crate::keys::sweep(state);
    // Id ranges whose sandbox ended (their lock is free).
    crate::userns::ranges::sweep(&crate::userns::ranges::dir(state.dir()));
    report.snapshot_temporaries = stale_snapshot_temporaries(state);
    // Without `nft` no table was ever made: nothing to sweep.
    report.tables = crate::network::sweep_tables().unwrap_or_default();
    report.spared = live.into_iter().collect();
    Ok(report)
}

/// Destroys sandbox `id`, noting the outcome in `report`.
fn reclaim(state: &State, id: &str, report: &mut GcReport) {
    match crate::destroy::destroy(state, id) {
        Ok(()) => report.sandboxes.push(id.to_string()),
        Err(e) => report.errors.push(format!("{id}: {}", e.message)),
    }
}

/// Removes half-built snapshots older than any capture may run; returns
/// how many.
fn stale_snapshot_temporaries(state: &State) -> usize {
    crate::snapshot::sweep(state, crate::snapshot::TEMPORARY_GRACE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b/c"), "/a b/c");
        assert_eq!(unescape(r"/tab\011x\134"), "/tab\tx\\");
        assert_eq!(unescape(r"/plain\04"), r"/plain\04");
    }

    #[test]
    fn a_half_made_sandbox_lives_exactly_as_long_as_its_creator() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(dir.path(), None).unwrap();
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
        let report = gc(&state).unwrap();
        assert_eq!(report.sandboxes, vec![id.to_string()]);
        assert!(!state.sandbox_dir(id).exists());
        assert!(
            gc(&state).unwrap().is_empty(),
            "a second pass finds nothing"
        );
    }
}
