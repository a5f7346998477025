//! `files.watch`: a stream of created, modified and removed events under a
//! path.
//!
//! None of the backend primitives offers native change notification, so
//! every backend is watched the same way: by polling. Every
//! [`WatchOptions::interval`] (default [`DEFAULT_WATCH_INTERVAL`]) the tree
//! is walked and compared with the previous walk by type, size, mode and
//! content digest (from one tree listing when the backend declares
//! `list_tree`, else by reading each file). Changes that happen and revert
//! between two polls are not seen. The poller stops when the [`Watcher`]
//! is dropped, or after yielding an error (the sandbox is gone, the path
//! failed to list).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::changes::{MarkEntry, diff};
use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// How often the tree is polled by default.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// What happened to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEventKind {
    /// It appeared.
    Created,
    /// Its type, size, mode or content changed.
    Modified,
    /// It disappeared.
    Removed,
}

/// One change seen by a [`Watcher`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// What happened.
    pub kind: WatchEventKind,
    /// The absolute sandbox path it happened to.
    pub path: String,
}

/// How [`Files::watch_with`](super::Files::watch_with) watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchOptions {
    /// Time between two polls.
    pub interval: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            interval: DEFAULT_WATCH_INTERVAL,
        }
    }
}

/// A stream of [`WatchEvent`]s; polling stops when it is dropped.
#[derive(Debug)]
pub struct Watcher {
    rx: mpsc::Receiver<Result<WatchEvent>>,
}

impl Watcher {
    /// The next event; `None` after the poller stopped on an error it
    /// already yielded.
    pub async fn next(&mut self) -> Option<Result<WatchEvent>> {
        self.rx.recv().await
    }
}

impl futures_core::Stream for Watcher {
    type Item = Result<WatchEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

async fn poll_loop(
    sb: Sandbox,
    root: String,
    interval: Duration,
    mut before: BTreeMap<String, MarkEntry>,
    tx: mpsc::Sender<Result<WatchEvent>>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = tx.closed() => return,
        }
        let now = match sb.files().state(Operation::FilesWatch, &root).await {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let c = diff(&before, &now);
        let events = c
            .added
            .into_iter()
            .map(|p| (WatchEventKind::Created, p))
            .chain(
                c.modified
                    .into_iter()
                    .map(|p| (WatchEventKind::Modified, p)),
            )
            .chain(c.removed.into_iter().map(|p| (WatchEventKind::Removed, p)));
        for (kind, path) in events {
            if tx.send(Ok(WatchEvent { kind, path })).await.is_err() {
                return;
            }
        }
        before = now;
    }
}

impl super::Files<'_> {
    /// Watches `path` (a directory, recursively, or one file) with the
    /// default interval. The first state is recorded before this returns,
    /// so every later change is reported.
    pub async fn watch(&self, path: &str) -> Result<Watcher> {
        self.watch_with(path, WatchOptions::default()).await
    }

    /// [`watch`](Self::watch) with options.
    pub async fn watch_with(&self, path: &str, options: WatchOptions) -> Result<Watcher> {
        if options.interval.is_zero() {
            return Err(self.sb.fail(
                corral_backend::ErrorCode::InvalidInput,
                Operation::FilesWatch,
                "interval: must be more than zero",
            ));
        }
        let first = self.state(Operation::FilesWatch, path).await?;
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(poll_loop(
            self.sb.clone(),
            path.to_string(),
            options.interval,
            first,
            tx,
        ));
        Ok(Watcher { rx })
    }
}
