//! What the service remembers of each sandbox it made: its template, its
//! metadata, its envd access token, its end time (kept here, so that
//! `/timeout` can move it either way), and its live processes; and which
//! sandbox an access token belongs to, for clients that name no sandbox.
//! With a state file ([`crate::saved`]), every change to what must
//! outlive a restart (a record made, forgotten, or its end time moved) is
//! written to it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use corral_backend::{Backend, now_ms};
use corral_wire::Token;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::control::presents;

use crate::envd::live::LiveEntry;
use crate::saved::{self, Saved, StateFileError};

/// One sandbox made through E2B's protocol.
#[derive(Debug)]
pub struct Record {
    /// The backend's id, which is E2B's `sandboxID`.
    pub id: String,
    /// The template it was made from.
    pub template: String,
    /// Creation order, for listing and paging.
    pub seq: u64,
    /// `envdAccessToken`, as the SDK is given it.
    pub access_token: String,
    /// The same, for comparisons in constant time.
    pub access_check: Token,
    /// E2B's metadata, as the caller gave it.
    pub metadata: BTreeMap<String, String>,
    /// Creation time, epoch milliseconds.
    pub started_at_ms: u64,
    /// When it is destroyed, epoch milliseconds; the reaper watches it.
    pub end_at: watch::Sender<u64>,
    /// Its live processes by pid.
    pub processes: Mutex<BTreeMap<u32, Arc<LiveEntry>>>,
    /// The next pid handed out where the backend gives none.
    pub next_pid: AtomicU32,
}

impl Record {
    /// The end time, epoch milliseconds.
    pub fn end_at_ms(&self) -> u64 {
        *self.end_at.borrow()
    }

    /// Moves the end time to `at_ms`.
    pub fn set_end_at(&self, at_ms: u64) {
        self.end_at.send_replace(at_ms);
    }

    /// The live processes, locked.
    pub fn processes(&self) -> MutexGuard<'_, BTreeMap<u32, Arc<LiveEntry>>> {
        self.processes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A pid for a process whose backend reports none.
    pub fn fresh_pid(&self) -> u32 {
        self.next_pid.fetch_add(1, Ordering::Relaxed)
    }

    /// What the state file keeps of it.
    pub fn saved(&self) -> Saved {
        Saved {
            id: self.id.clone(),
            template: self.template.clone(),
            seq: self.seq,
            started_at_ms: self.started_at_ms,
            end_at_ms: self.end_at_ms(),
            metadata: self.metadata.clone(),
        }
    }
}

/// The SHA-256 of an access token: what the token map is keyed by, so
/// that it holds no token itself.
type TokenDigest = [u8; 32];

fn digest(token: &[u8]) -> TokenDigest {
    Sha256::digest(token).into()
}

/// The sandboxes of one service.
#[derive(Debug, Default)]
pub struct Sandboxes {
    index: Mutex<Index>,
    /// The state file, if the service keeps one; its lock orders writes,
    /// so that the file always ends holding the latest records.
    state_file: Option<Mutex<PathBuf>>,
}

/// The records, and which record each access token's digest belongs to:
/// one lock, so the two never disagree.
#[derive(Debug, Default)]
struct Index {
    records: BTreeMap<String, Arc<Record>>,
    by_token: BTreeMap<TokenDigest, String>,
}

impl Sandboxes {
    /// No sandboxes yet; their records are written to `state_file` if
    /// given.
    pub fn new(state_file: Option<PathBuf>) -> Self {
        Sandboxes {
            index: Mutex::default(),
            state_file: state_file.map(Mutex::new),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes every record to the state file (if there is one).
    pub fn persist(&self) -> Result<(), StateFileError> {
        let Some(file) = &self.state_file else {
            return Ok(());
        };
        let path = file.lock().unwrap_or_else(|p| p.into_inner());
        let records = self.all().iter().map(|r| r.saved()).collect();
        saved::store(&path, records)
    }

    /// [`Self::persist`] where no caller can be told: a failure is one
    /// line on stderr.
    fn persist_or_say(&self) {
        if let Err(e) = self.persist() {
            eprintln!("corral: error: {e}");
        }
    }

    /// The record whose access token is `token`: found by the token's
    /// digest, then checked against the record's token in constant time.
    /// An empty or unknown token finds none.
    pub fn by_token(&self, token: &[u8]) -> Option<Arc<Record>> {
        if token.is_empty() {
            return None;
        }
        let record = {
            let index = self.lock();
            let id = index.by_token.get(&digest(token))?;
            index.records.get(id).cloned()?
        };
        presents(&record.access_check, Some(token)).then_some(record)
    }

    /// The record of `id`, if this service made it and it is not gone.
    pub fn get(&self, id: &str) -> Option<Arc<Record>> {
        self.lock().records.get(id).cloned()
    }

    /// Every record, in creation order.
    pub fn all(&self) -> Vec<Arc<Record>> {
        let mut all: Vec<_> = self.lock().records.values().cloned().collect();
        all.sort_by_key(|r| r.seq);
        all
    }

    /// Adds a record and starts its reaper, which destroys the sandbox at
    /// its end time (however often that moves) and forgets it.
    pub fn insert(self: &Arc<Self>, record: Arc<Record>, backend: Arc<dyn Backend>) {
        let mut end = record.end_at.subscribe();
        let id = record.id.clone();
        {
            let mut index = self.lock();
            index
                .by_token
                .insert(digest(record.access_token.as_bytes()), id.clone());
            index.records.insert(id.clone(), record);
        }
        let sandboxes = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let at = *end.borrow_and_update();
                let wait = std::time::Duration::from_millis(at.saturating_sub(now_ms()));
                tokio::select! {
                    () = tokio::time::sleep(wait) => {
                        if *end.borrow() > now_ms() {
                            continue;
                        }
                        break;
                    }
                    changed = end.changed() => {
                        if changed.is_err() {
                            // The record is gone: the sandbox was killed.
                            return;
                        }
                        if let Some(sandboxes) = sandboxes.upgrade() {
                            sandboxes.persist_or_say();
                        }
                    }
                }
            }
            if let Some(sandboxes) = sandboxes.upgrade() {
                let _ = sandboxes.remove(&id, backend.as_ref()).await;
            }
        });
    }

    /// Forgets `id`, kills its live processes and destroys it. Whether this
    /// service knew it.
    pub async fn remove(
        &self,
        id: &str,
        backend: &dyn Backend,
    ) -> Result<bool, corral_backend::BackendError> {
        let record = {
            let mut index = self.lock();
            let Some(record) = index.records.remove(id) else {
                return Ok(false);
            };
            index
                .by_token
                .remove(&digest(record.access_token.as_bytes()));
            record
        };
        self.persist_or_say();
        let live: Vec<_> = record.processes().values().cloned().collect();
        for entry in live {
            let _ = entry.control.kill().await;
        }
        backend.destroy(id).await?;
        Ok(true)
    }
}
