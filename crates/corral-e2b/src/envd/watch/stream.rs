//! `WatchDir`: a server stream of a `start` event, then a `filesystem`
//! event for each change seen (see [`super::snapshot`]), `keepalive`
//! events every `Keepalive-Ping-Interval` seconds, and the end-of-stream
//! message: with `deadline_exceeded` at the `Connect-Timeout-Ms` deadline,
//! with the failure when a poll fails or the sandbox is gone. The watch
//! stops as soon as its client goes away.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::Request;
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::snapshot::{self, Scope, Snapshot};
use super::{Lease, POLL_INTERVAL, WatchRequest, alive};
use crate::Inner;
use crate::body::read_body;
use crate::envd::connect::{deadline, end_of_stream, keepalive, message, single_message};
use crate::envd::rpc::{MAX_RPC_BYTES, Rpc, decode};
use crate::envd::{EnvdUser, authorized};
use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// Starts a watch and streams its events into `tx`.
pub async fn watch_dir(
    inner: &Arc<Inner>,
    req: Request<Incoming>,
    tx: mpsc::Sender<Bytes>,
) -> E2bResult<()> {
    if req.method() != hyper::Method::POST {
        return Err(E2bError::invalid("method", "a Connect call is a POST"));
    }
    let record = authorized(inner, &req)?;
    let _user = EnvdUser::of(&req)?;
    let deadline = deadline(&req)?;
    let keepalive = keepalive(&req)?;
    let body = read_body(req, MAX_RPC_BYTES).await?;
    let request: WatchRequest = decode(Rpc::WatchDir, single_message(&body)?)?;
    let scope = request.scope(inner, &record).await?;
    let lease = inner.watchers.lease(&record.id)?;
    let first = snapshot::take(inner.backend.files(), &scope).await?;
    tokio::spawn(stream(
        Arc::clone(inner),
        record,
        Watch {
            scope,
            last: first,
            _lease: lease,
        },
        tx,
        keepalive,
        deadline,
    ));
    Ok(())
}

/// A running watch: what it covers, what it saw last, its place.
struct Watch {
    scope: Scope,
    last: Snapshot,
    _lease: Lease,
}

/// One `WatchDirResponse`: its oneof `event` is a field of the message
/// itself (`{"start": {}}`, `{"filesystem": …}`, `{"keepalive": {}}`).
fn frame(event: Value) -> Bytes {
    message(&event)
}

/// Sends each change since the last poll; `Err` ends the stream with it,
/// `Ok(false)` means the client is gone.
async fn poll_once(
    inner: &Inner,
    record: &Record,
    watch: &mut Watch,
    tx: &mpsc::Sender<Bytes>,
) -> E2bResult<bool> {
    if !alive(inner, record) {
        return Err(E2bError::NoSandbox {
            id: record.id.clone(),
        });
    }
    let now = snapshot::take(inner.backend.files(), &watch.scope).await?;
    for change in snapshot::diff(&watch.last, &now) {
        let event = json!({ "filesystem": change.to_json(&watch.scope) });
        if tx.send(frame(event)).await.is_err() {
            return Ok(false);
        }
    }
    watch.last = now;
    Ok(true)
}

async fn stream(
    inner: Arc<Inner>,
    record: Arc<Record>,
    mut watch: Watch,
    tx: mpsc::Sender<Bytes>,
    keepalive: Option<Duration>,
    deadline: Option<Duration>,
) {
    if tx.send(frame(json!({ "start": {} }))).await.is_err() {
        return;
    }
    let ping = keepalive.unwrap_or(Duration::from_secs(3600 * 24));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
    let until = tokio::time::sleep(deadline.unwrap_or(Duration::from_secs(u32::MAX.into())));
    tokio::pin!(until);
    loop {
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {
                match poll_once(&inner, &record, &mut watch, &tx).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        let _ = tx.send(end_of_stream(Some(&e))).await;
                        return;
                    }
                }
            }
            _ = ticker.tick(), if keepalive.is_some() => {
                if tx.send(frame(json!({ "keepalive": {} }))).await.is_err() {
                    return;
                }
            }
            () = &mut until => {
                let error = E2bError::Deadline {
                    after_ms: deadline
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                };
                let _ = tx.send(end_of_stream(Some(&error))).await;
                return;
            }
        }
    }
}
