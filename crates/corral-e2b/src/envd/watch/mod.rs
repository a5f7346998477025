//! Watching a directory: `filesystem.Filesystem/WatchDir` (a stream) and
//! the polled trio `CreateWatcher`, `GetWatcherEvents`, `RemoveWatcher`.
//!
//! The backends have no change notification, so a watcher polls: every
//! [`POLL_INTERVAL`] it takes a [`snapshot::Snapshot`] of the directory and
//! turns the diff with the last one into E2B's events (see
//! [`snapshot`] for which). Everything is bounded: [`MAX_WATCHERS`] per
//! sandbox, [`snapshot::MAX_WATCH_ENTRIES`] per snapshot, and
//! [`polled::MAX_QUEUED_EVENTS`] waiting per polled watcher. A watcher
//! ends with its sandbox, and a stream's when its client goes away.

pub mod polled;
pub mod snapshot;
pub mod stream;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use corral_backend::FileType;
use serde::Deserialize;

use self::snapshot::Scope;
use super::resolve;
use crate::Inner;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// How long a watcher waits between two polls.
pub const POLL_INTERVAL: Duration = Duration::from_millis(150);

/// The most watchers (streams and polled together) one sandbox holds.
pub const MAX_WATCHERS: usize = 16;

/// `WatchDirRequest` and `CreateWatcherRequest`. `allowNetworkMounts` is
/// accepted and moot: a poll sees every mount alike.
#[derive(Debug, Deserialize)]
pub struct WatchRequest {
    #[serde(default)]
    path: String,
    #[serde(default)]
    recursive: bool,
    #[serde(default, rename = "includeEntry", alias = "include_entry")]
    include_entry: bool,
}

impl WatchRequest {
    /// What the request watches, once its path is resolved and found to be
    /// a directory of the sandbox.
    pub async fn scope(&self, inner: &Inner, record: &Record) -> E2bResult<Scope> {
        let root = resolve("path", &self.path)?;
        let stat = inner.backend.files().stat(&record.id, &root).await?;
        if stat.file_type != FileType::Directory {
            return Err(E2bError::NotADirectory {
                path: root.to_string(),
            });
        }
        Ok(Scope {
            sandbox: record.id.clone(),
            root,
            recursive: self.recursive,
            include_entry: self.include_entry,
        })
    }
}

/// Whether `record` is still a live sandbox of the service.
pub fn alive(inner: &Inner, record: &Record) -> bool {
    inner
        .sandboxes
        .get(&record.id)
        .is_some_and(|r| std::ptr::eq(Arc::as_ptr(&r), record))
}

/// The watchers of one sandbox.
#[derive(Debug, Default)]
struct Slot {
    streams: usize,
    polled: BTreeMap<String, Arc<polled::Polled>>,
}

impl Slot {
    fn count(&self) -> usize {
        self.streams + self.polled.len()
    }
}

/// Every sandbox's watchers, counted against [`MAX_WATCHERS`].
#[derive(Debug, Default)]
pub struct Watchers {
    slots: Mutex<BTreeMap<String, Slot>>,
    next: AtomicU64,
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn admit(slots: &mut BTreeMap<String, Slot>, sandbox: &str) -> E2bResult<()> {
        if slots.get(sandbox).map_or(0, Slot::count) >= MAX_WATCHERS {
            return Err(E2bError::TooManyWatchers {
                limit: MAX_WATCHERS,
            });
        }
        Ok(())
    }

    /// A place for one stream of `sandbox`, held until the lease drops.
    pub fn lease(self: &Arc<Self>, sandbox: &str) -> E2bResult<Lease> {
        let mut slots = self.lock();
        Self::admit(&mut slots, sandbox)?;
        slots.entry(sandbox.to_string()).or_default().streams += 1;
        Ok(Lease {
            watchers: Arc::clone(self),
            sandbox: sandbox.to_string(),
        })
    }

    /// Registers a polled watcher made by `make` under a fresh id.
    pub fn add_polled(
        &self,
        sandbox: &str,
        make: impl FnOnce(String) -> Arc<polled::Polled>,
    ) -> E2bResult<Arc<polled::Polled>> {
        let mut slots = self.lock();
        Self::admit(&mut slots, sandbox)?;
        let id = format!("w{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let watcher = make(id.clone());
        slots
            .entry(sandbox.to_string())
            .or_default()
            .polled
            .insert(id, Arc::clone(&watcher));
        Ok(watcher)
    }

    /// The polled watcher `id` of `sandbox`.
    pub fn polled(&self, sandbox: &str, id: &str) -> E2bResult<Arc<polled::Polled>> {
        self.lock()
            .get(sandbox)
            .and_then(|s| s.polled.get(id).cloned())
            .ok_or_else(|| E2bError::NoWatcher { id: id.to_string() })
    }

    /// Forgets the polled watcher `id` of `sandbox` and stops its poller.
    pub fn remove_polled(&self, sandbox: &str, id: &str) -> E2bResult<()> {
        let mut slots = self.lock();
        let removed = slots.get_mut(sandbox).and_then(|s| s.polled.remove(id));
        let Some(watcher) = removed else {
            return Err(E2bError::NoWatcher { id: id.to_string() });
        };
        watcher.stop.cancel();
        Self::tidy(&mut slots, sandbox);
        Ok(())
    }

    fn tidy(slots: &mut BTreeMap<String, Slot>, sandbox: &str) {
        if slots.get(sandbox).is_some_and(|s| s.count() == 0) {
            slots.remove(sandbox);
        }
    }
}

/// One stream's place among its sandbox's watchers.
#[derive(Debug)]
pub struct Lease {
    watchers: Arc<Watchers>,
    sandbox: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut slots = self.watchers.lock();
        if let Some(slot) = slots.get_mut(&self.sandbox) {
            slot.streams = slot.streams.saturating_sub(1);
        }
        Watchers::tidy(&mut slots, &self.sandbox);
    }
}
