//! Reclaim: the one place that decides what host state of this backend
//! is no longer anyone's, and removes it. `gc` is the pass (`corral gc`,
//! [`crate::LinuxBackend::gc`], the tests); a create whose key an expired
//! sandbox still holds reclaims that one sandbox by the same rule
//! (`free_expired_key`). Both tear a sandbox down through
//! `crate::destroy`, as `destroy` itself does (a pass finishes each one
//! itself; the create hands it to a reaper, as `destroy` does). Nothing else reclaims:
//! reading a record (`crate::state`) never changes anything.
//!
//! # What is reclaimed, and when
//!
//! | what                                      | reclaimed when                                 |
//! |-------------------------------------------|------------------------------------------------|
//! | a complete sandbox (its `meta.json`)      | it is not live: its lifetime is over, or its   |
//! |                                           | PID 1 is gone (`Condition::is_live`)           |
//! | a half-made sandbox (no record yet)       | its creator is gone; with no `creator` file,   |
//! |                                           | once older than [`NO_CREATOR_GRACE`]           |
//! | a `corral-init` in a sandbox's cgroup     | that sandbox is not live or has no directory   |
//! | a mount under `sandboxes/<id>`            | sandbox `<id>` is not live                     |
//! | an entry of `reaping/` (a destroyed       | no reaper holds its lock (its reaper was       |
//! | sandbox's directory, `crate::reaping`)    | killed, or never started)                      |
//! | a preview forwarder                       | its sandbox is not live                        |
//! | an `lnx-` cgroup with no directory here   | empty, older than [`CGROUP_GRACE`], and no     |
//! |                                           | entry of `reaping/` names it                   |
//! | a key claim                               | names no sandbox with a directory, older than  |
//! |                                           | `crate::keys::GRACE`                           |
//! | a half-made disk template                 | the host process that made it is gone (the     |
//! |                                           | shared template of each size is kept)          |
//! | an id range                               | its lock is free (its sandbox ended)           |
//! | a half-built snapshot (`snapshots/.tmp-*`)| older than [`SNAPSHOT_GRACE`], past any        |
//! |                                           | capture's deadline                             |
//! | a firewall table of an allowlisted sandbox| its link is gone                               |
//!
//! An expired sandbox is reclaimed by the next pass, or at once by a create
//! with its key; until then it is `not_found` to every caller and holds
//! nothing but host state (its PID 1 ended everything at the deadline). A
//! dead one stays listed `dead` until a pass or `destroy` reclaims it.
//!
//! # What is never touched
//!
//! - a **live** sandbox: a complete one whose PID 1 runs with the start
//!   time recorded next to its pid (a pid is never reused with the same
//!   start time), paused ones included — a frozen PID 1 cannot answer on
//!   its control socket, but it is alive by this test — until its
//!   lifetime ends; a half-made one whose creator runs (its pid and start
//!   time are in the `creator` file written right after the directory);
//! - a **young** piece that may belong to work in flight: a sandbox
//!   directory without a `creator` file younger than [`NO_CREATOR_GRACE`],
//!   a cgroup younger than [`CGROUP_GRACE`] (a create makes it just before
//!   starting its init), a key claim younger than `crate::keys::GRACE`, a
//!   half-built snapshot younger than [`SNAPSHOT_GRACE`];
//! - a process that is not a `corral-init` in the cgroup of a sandbox with
//!   a directory here, and a cgroup that still holds a process (cgroups are
//!   shared by every state directory of the same parent);
//! - an entry of `reaping/` whose reaper runs (it holds the entry's lock),
//!   nor that entry's cgroup: only one of a reaper and a pass ever acts on
//!   an entry;
//! - published snapshots: they are deleted only by `delete_snapshot` (the
//!   contract's `cleanup` decides by their labels, above this backend).
//!
//! An init whose creator dies before the record is committed ends its
//! sandbox by itself (see `crate::init`), and so does one still waiting in
//! a pool; a pass reclaims what they leave on the host.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use corral_backend::{HostStateReclaim, Result};
use serde::Serialize;

use crate::state::{
    Condition, State, condition, is_sandbox_id, older_than, process_start, read_meta, state_error,
};

/// The file holding `<pid> <start time>` of the process creating a sandbox.
const CREATOR_FILE: &str = "creator";
/// How old a sandbox directory without a `creator` file must be to be reclaimed.
pub const NO_CREATOR_GRACE: Duration = Duration::from_secs(2);
/// How old an empty sandbox cgroup with no directory here must be to be removed.
pub const CGROUP_GRACE: Duration = Duration::from_secs(10);
/// How old a half-built snapshot (`snapshots/.tmp-*`) must be to be
/// removed: past any capture's deadline, so never one still being written.
pub const SNAPSHOT_GRACE: Duration = crate::snapshot::TEMPORARY_GRACE;
/// How long killed processes (inits, forwarders) get to disappear.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// What one `gc` pass reclaimed and what it spared: the sandboxes, and the
/// host state beside them in the backend-neutral shape the reclaim member
/// reports ([`HostStateReclaim`]), so the counts are declared once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// Sandboxes (directories and everything they held) reclaimed, the
    /// destroyed ones whose reaper was gone (entries of `reaping/`)
    /// included.
    pub sandboxes: Vec<String>,
    /// The host state reclaimed beside them, and the live sandboxes spared.
    #[serde(flatten)]
    pub host: HostStateReclaim,
    /// What could not be reclaimed (sandboxes, the image store), one line
    /// each (the pass goes on with the others; a next pass retries them).
    pub errors: Vec<String>,
}

impl GcReport {
    /// Whether nothing was reclaimed and nothing failed.
    pub fn is_empty(&self) -> bool {
        let h = &self.host;
        self.sandboxes.is_empty()
            && h.processes_killed == 0
            && h.mounts_detached == 0
            && h.cgroups.is_empty()
            && h.key_claims == 0
            && h.tables.is_empty()
            && h.snapshot_temporaries == 0
            && self.errors.is_empty()
    }
}

impl From<GcReport> for corral_backend::ReclaimReport {
    fn from(r: GcReport) -> Self {
        corral_backend::ReclaimReport {
            sandboxes: r.sandboxes,
            errors: r.errors,
            detail: corral_backend::ReclaimDetail::HostState(r.host),
        }
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
    Some(state.host.process_start(pid) == Some(start))
}

/// Whether sandbox `id` (its directory exists) is live; see the module docs.
fn is_live(state: &State, id: &str) -> bool {
    if let Ok(Some(meta)) = read_meta(state, id) {
        return condition(state, &meta).is_live();
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

/// The `corral-init` processes among `inits` in the cgroup of a sandbox
/// with a directory under `sandboxes` (its command line names nothing: the
/// sandbox id is the last component of its cgroup path). Any other is left
/// alone: cgroups are shared by every state directory of the same parent.
fn inits_here(inits: Vec<crate::host::InitProcess>, sandboxes: &Path) -> Vec<InitProcess> {
    inits
        .into_iter()
        .filter_map(|p| {
            let sandbox = p
                .cgroups
                .into_iter()
                .find(|name| is_sandbox_id(name) && sandboxes.join(name).is_dir())?;
            Some(InitProcess {
                pid: p.pid,
                start: p.start,
                sandbox,
            })
        })
        .collect()
}

/// The mount points among `mounts` under `sandboxes`, deepest first, with
/// the sandbox each belongs to.
fn mounts_under(mounts: Vec<PathBuf>, sandboxes: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = mounts
        .into_iter()
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
/// second pass right after finds nothing. Every effect on the host (and
/// every look at its processes, mounts and cgroups) goes through the
/// state's [`crate::host::Host`].
pub(crate) fn gc(state: &State) -> Result<GcReport> {
    let host = state.host.as_ref();
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
    let inits = inits_here(host.init_processes(), &sandboxes);
    let orphans: Vec<&InitProcess> = inits
        .iter()
        .filter(|p| !live.contains(&p.sandbox))
        .filter(|p| dead.contains(&p.sandbox) || !state.sandbox_dir(&p.sandbox).exists())
        .collect();
    // A frozen process does not die of SIGKILL until thawed.
    for p in &orphans {
        host.thaw_cgroup(state.cgroups.as_ref(), &p.sandbox);
    }
    let orphans: Vec<(u32, u64)> = orphans.iter().map(|p| (p.pid, p.start)).collect();
    if !orphans.is_empty() {
        report.host.processes_killed = host.kill_all(&orphans, KILL_WAIT);
    }
    for id in &dead {
        reclaim(state, id, &mut report);
    }
    // Preview forwarders whose sandbox is gone (each also exits by itself
    // when its sandbox's PID 1 does).
    let forwarders = crate::preview::orphans(&host.preview_forwarders(), &sandboxes, &live);
    if !forwarders.is_empty() {
        report.host.processes_killed += host.kill_all(&forwarders, KILL_WAIT);
    }
    // Sandboxes that appeared since the listing are judged afresh: a create
    // running elsewhere is live by its creator.
    let stale = |id: &String| dead.contains(id) || (!live.contains(id) && !is_live(state, id));
    for (id, path) in mounts_under(host.mount_points(), &sandboxes) {
        if stale(&id) && host.unmount_all(&path).is_ok() {
            report.host.mounts_detached += 1;
        }
    }
    // Destroyed sandboxes whose reaper is gone.
    for id in crate::reaping::entries(state) {
        finish_abandoned(state, &id, &mut report);
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
    let cgroups = state.cgroups.as_ref();
    for name in host.cgroup_names(cgroups) {
        if is_sandbox_id(&name)
            && !live.contains(&name)
            && std::fs::symlink_metadata(state.sandbox_dir(&name)).is_err()
            && std::fs::symlink_metadata(state.reaping_entry(&name)).is_err()
            && host
                .empty_cgroup_age(cgroups, &name)
                .is_some_and(|age| age >= CGROUP_GRACE)
            && host.remove_cgroup(cgroups, &name).is_ok()
        {
            report.host.cgroups.push(name);
        }
    }
    crate::disk::image::sweep(&crate::disk::templates_dir(state));
    // What interrupted image imports left (the store is busy when one runs
    // now; a later pass takes the rest).
    if let Some(images) = &state.images
        && let Err(e) = images.reclaim()
    {
        report.errors.push(format!("the image store: {e}"));
    }
    report.host.key_claims = crate::keys::sweep(state);
    // Id ranges whose sandbox ended (their lock is free).
    crate::userns::ranges::sweep(&crate::userns::ranges::dir(state.dir()));
    report.host.snapshot_temporaries = stale_snapshot_temporaries(state);
    report.host.tables = host.sweep_tables();
    report.host.spared = live.into_iter().collect();
    Ok(report)
}

/// Frees `key` for a create when the sandbox holding it expired: that one
/// is gone to every caller (`find` does not return it), so it is reclaimed
/// here, now. A live or dead holder is left alone (the claim then refuses
/// the create with `conflict`, as before).
pub(crate) fn free_expired_key(state: &State, key: &str) -> Result<()> {
    let Some(holder) = crate::keys::holder_of(state, key) else {
        return Ok(());
    };
    match read_meta(state, &holder) {
        Ok(Some(meta)) if condition(state, &meta) == Condition::Expired => {
            crate::destroy::destroy(state, &holder)
        }
        _ => Ok(()),
    }
}

/// Destroys sandbox `id` here and now (a pass is a reaper itself: what it
/// reports reclaimed is gone), noting the outcome in `report`.
fn reclaim(state: &State, id: &str, report: &mut GcReport) {
    match crate::destroy::destroy_here(state, id) {
        Ok(()) => report.sandboxes.push(id.to_string()),
        Err(e) => report.errors.push(format!("{id}: {}", e.message())),
    }
}

/// Finishes the entry of destroyed sandbox `id` in `reaping/` unless a
/// reaper holds it, noting the outcome in `report`. Where the removal
/// refuses (something is still mounted below the entry, not under its
/// known mount point), the mount table — read only on this rare path —
/// names what to detach, and the entry is finished once more.
fn finish_abandoned(state: &State, id: &str, report: &mut GcReport) {
    let host = state.host.as_ref();
    // Held through the fallback too: only one of a reaper and a pass ever
    // acts on an entry.
    let _lock = match crate::reaping::lock(state, id) {
        Ok(Some(lock)) => lock,
        // Its reaper runs: it is that reaper's.
        Ok(None) => return,
        Err(e) => {
            report.errors.push(format!("{id}: {}", e.message()));
            return;
        }
    };
    let finished = match crate::reaping::finish_locked(state, id) {
        Ok(()) => Ok(()),
        Err(_) => {
            let entry = state.reaping_entry(id);
            for (_, path) in mounts_under(host.mount_points(), &state.reaping()) {
                if path.starts_with(&entry) && host.unmount_all(&path).is_ok() {
                    report.host.mounts_detached += 1;
                }
            }
            crate::reaping::finish_locked(state, id)
        }
    };
    match finished {
        Ok(()) => report.sandboxes.push(id.to_string()),
        Err(e) => report.errors.push(format!("{id}: {}", e.message())),
    }
}

/// Removes half-built snapshots older than any capture may run; returns
/// how many.
fn stale_snapshot_temporaries(state: &State) -> usize {
    crate::snapshot::sweep(state, SNAPSHOT_GRACE)
}

#[cfg(test)]
#[path = "gc_tests.rs"]
mod tests;
