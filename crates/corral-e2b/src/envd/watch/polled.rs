//! The polled watchers: `CreateWatcher` starts one (its poller takes a
//! snapshot every [`super::POLL_INTERVAL`] and queues the events),
//! `GetWatcherEvents` polls once more and hands over what is queued, and
//! `RemoveWatcher` stops it.
//!
//! A watcher that queued more than [`MAX_QUEUED_EVENTS`] since the last
//! `GetWatcherEvents` drops them all and answers the next one with
//! `resource_exhausted` (it is removed: its view can no longer be
//! trusted). A watcher whose poll failed (its directory is gone, or grew
//! past the snapshot bound) hands over what it queued, then answers that
//! failure once and is removed. A watcher ends with its sandbox.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use corral_backend::CancellationToken;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::snapshot::{self, Scope, Snapshot};
use super::{POLL_INTERVAL, WatchRequest, alive};
use crate::Inner;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// The most events one polled watcher queues between two
/// `GetWatcherEvents`.
pub const MAX_QUEUED_EVENTS: usize = 1_024;

/// What a polled watcher keeps between polls.
#[derive(Debug)]
struct Polls {
    last: Snapshot,
    queue: VecDeque<Value>,
    overflowed: bool,
    failure: Option<E2bError>,
}

/// One polled watcher.
#[derive(Debug)]
pub struct Polled {
    /// Its id.
    pub id: String,
    scope: Scope,
    polls: Mutex<Polls>,
    /// Cancelled when the watcher is removed: its poller stops.
    pub stop: CancellationToken,
}

impl Polled {
    /// Takes a snapshot and queues the changes since the last one. After a
    /// failure or an overflow it takes no more (the poller still watches
    /// for the end of the sandbox, so the watcher never outlives it).
    async fn poll(&self, inner: &Inner) {
        let mut polls = self.polls.lock().await;
        if polls.overflowed || polls.failure.is_some() {
            return;
        }
        match snapshot::take(inner.backend.files(), &self.scope).await {
            Ok(now) => {
                for change in snapshot::diff(&polls.last, &now) {
                    if polls.queue.len() >= MAX_QUEUED_EVENTS {
                        polls.overflowed = true;
                        polls.queue = VecDeque::new();
                        break;
                    }
                    polls.queue.push_back(change.to_json(&self.scope));
                }
                polls.last = now;
            }
            Err(e) => polls.failure = Some(e),
        }
    }
}

/// `GetWatcherEventsRequest` and `RemoveWatcherRequest`.
#[derive(Debug, Deserialize)]
pub struct WatcherRequest {
    #[serde(default, rename = "watcherId", alias = "watcher_id")]
    watcher_id: String,
}

/// Polls until the watcher is removed or its sandbox is gone (then it
/// removes the watcher itself).
async fn poller(inner: Weak<Inner>, record: Weak<Record>, watcher: Arc<Polled>) {
    loop {
        tokio::select! {
            () = watcher.stop.cancelled() => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let live = record.upgrade().is_some_and(|r| alive(&inner, &r));
        if !live {
            let _ = inner
                .watchers
                .remove_polled(&watcher.scope.sandbox, &watcher.id);
            return;
        }
        watcher.poll(&inner).await;
    }
}

/// `CreateWatcher`: `{watcherId}`.
pub async fn create(
    inner: &Arc<Inner>,
    record: &Arc<Record>,
    req: &WatchRequest,
) -> E2bResult<Value> {
    let scope = req.scope(inner, record).await?;
    let first = snapshot::take(inner.backend.files(), &scope).await?;
    let watcher = inner.watchers.add_polled(&record.id, |id| {
        Arc::new(Polled {
            id,
            scope,
            polls: Mutex::new(Polls {
                last: first,
                queue: VecDeque::new(),
                overflowed: false,
                failure: None,
            }),
            stop: CancellationToken::new(),
        })
    })?;
    tokio::spawn(poller(
        Arc::downgrade(inner),
        Arc::downgrade(record),
        Arc::clone(&watcher),
    ));
    Ok(json!({ "watcherId": watcher.id }))
}

/// `GetWatcherEvents`: `{events}` since the last call (a poll is taken
/// first, so a change made before the call is in its answer).
pub async fn events(inner: &Arc<Inner>, record: &Record, req: &WatcherRequest) -> E2bResult<Value> {
    let watcher = inner.watchers.polled(&record.id, &req.watcher_id)?;
    watcher.poll(inner).await;
    let mut polls = watcher.polls.lock().await;
    if polls.overflowed {
        drop(polls);
        let _ = inner.watchers.remove_polled(&record.id, &watcher.id);
        return Err(E2bError::WatchOverflow {
            id: watcher.id.clone(),
            limit: MAX_QUEUED_EVENTS,
        });
    }
    if polls.queue.is_empty()
        && let Some(failure) = polls.failure.take()
    {
        drop(polls);
        let _ = inner.watchers.remove_polled(&record.id, &watcher.id);
        return Err(failure);
    }
    let events: Vec<Value> = polls.queue.drain(..).collect();
    Ok(json!({ "events": events }))
}

/// `RemoveWatcher`: `{}`.
pub fn remove(inner: &Inner, record: &Record, req: &WatcherRequest) -> E2bResult<Value> {
    inner.watchers.remove_polled(&record.id, &req.watcher_id)?;
    Ok(json!({}))
}
