//! The Connect procedures served, and one call: route to the sandbox,
//! check its access token, read the body within bounds, answer (unary
//! calls as `application/json`, streams with envelopes).

use std::sync::Arc;

use hyper::Request;
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{authorized, connect, filesystem, process, pty, watch};
use crate::Inner;
use crate::body::{ChannelBody, Reply, connect_error, json_reply, read_body};
use crate::error::{E2bError, E2bResult};

/// The largest request of a Connect call, in bytes.
pub const MAX_RPC_BYTES: u64 = 8 * 1024 * 1024;

/// A Connect procedure this server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rpc {
    /// `process.Process/Start` (server-streaming).
    Start,
    /// `process.Process/Connect` (server-streaming).
    Connect,
    /// `process.Process/List`.
    List,
    /// `process.Process/SendSignal`.
    SendSignal,
    /// `process.Process/SendInput`.
    SendInput,
    /// `process.Process/CloseStdin`.
    CloseStdin,
    /// `process.Process/Update` (resizes a pty).
    Update,
    /// `filesystem.Filesystem/Stat`.
    Stat,
    /// `filesystem.Filesystem/ListDir`.
    ListDir,
    /// `filesystem.Filesystem/MakeDir`.
    MakeDir,
    /// `filesystem.Filesystem/Move`.
    Move,
    /// `filesystem.Filesystem/Remove`.
    Remove,
    /// `filesystem.Filesystem/WatchDir` (server-streaming).
    WatchDir,
    /// `filesystem.Filesystem/CreateWatcher`.
    CreateWatcher,
    /// `filesystem.Filesystem/GetWatcherEvents`.
    GetWatcherEvents,
    /// `filesystem.Filesystem/RemoveWatcher`.
    RemoveWatcher,
}

impl Rpc {
    /// The procedure at `path` (without its leading `/`).
    pub fn from_path(path: &str) -> Option<Self> {
        Some(match path {
            "process.Process/Start" => Rpc::Start,
            "process.Process/Connect" => Rpc::Connect,
            "process.Process/List" => Rpc::List,
            "process.Process/SendSignal" => Rpc::SendSignal,
            "process.Process/SendInput" => Rpc::SendInput,
            "process.Process/CloseStdin" => Rpc::CloseStdin,
            "process.Process/Update" => Rpc::Update,
            "filesystem.Filesystem/Stat" => Rpc::Stat,
            "filesystem.Filesystem/ListDir" => Rpc::ListDir,
            "filesystem.Filesystem/MakeDir" => Rpc::MakeDir,
            "filesystem.Filesystem/Move" => Rpc::Move,
            "filesystem.Filesystem/Remove" => Rpc::Remove,
            "filesystem.Filesystem/WatchDir" => Rpc::WatchDir,
            "filesystem.Filesystem/CreateWatcher" => Rpc::CreateWatcher,
            "filesystem.Filesystem/GetWatcherEvents" => Rpc::GetWatcherEvents,
            "filesystem.Filesystem/RemoveWatcher" => Rpc::RemoveWatcher,
            _ => return None,
        })
    }

    /// Whether the procedure streams its answer.
    pub fn streams(self) -> bool {
        matches!(self, Rpc::Start | Rpc::Connect | Rpc::WatchDir)
    }
}

/// A request message as `T`.
pub fn decode<T: DeserializeOwned>(rpc: Rpc, body: &[u8]) -> E2bResult<T> {
    let body: &[u8] = if body.is_empty() { b"{}" } else { body };
    serde_json::from_slice(body)
        .map_err(|e| E2bError::invalid(format!("{rpc:?} request"), e.to_string()))
}

/// Answers one call.
pub async fn call(inner: Arc<Inner>, rpc: Rpc, req: Request<Incoming>) -> Reply {
    if rpc.streams() {
        let (tx, body) = ChannelBody::new(16);
        let started = match rpc {
            Rpc::WatchDir => watch::stream::watch_dir(&inner, req, tx.clone()).await,
            Rpc::Connect => process::connect(&inner, req, tx.clone()).await,
            _ => process::start(&inner, req, tx.clone()).await,
        };
        if let Err(e) = started {
            let _ = tx.send(connect::end_of_stream(Some(&e))).await;
        }
        return body.reply(connect::STREAM_CONTENT_TYPE);
    }
    match unary(&inner, rpc, req).await {
        Ok(value) => json_reply(hyper::StatusCode::OK, &value),
        Err(e) => connect_error(&e),
    }
}

async fn unary(inner: &Arc<Inner>, rpc: Rpc, req: Request<Incoming>) -> E2bResult<Value> {
    if req.method() != hyper::Method::POST {
        return Err(E2bError::invalid("method", "a Connect call is a POST"));
    }
    let record = authorized(inner, &req)?;
    let user = super::EnvdUser::of(&req)?;
    let body = read_body(req, MAX_RPC_BYTES).await?;
    match rpc {
        Rpc::Start | Rpc::Connect | Rpc::WatchDir => {
            Err(E2bError::invalid("method", "the call streams"))
        }
        Rpc::List => Ok(process::list(&record)),
        Rpc::SendSignal => process::send_signal(&record, &decode(rpc, &body)?).await,
        Rpc::SendInput => process::send_input(&record, &decode(rpc, &body)?).await,
        Rpc::CloseStdin => process::close_stdin(&record, &decode(rpc, &body)?).await,
        Rpc::Update => pty::update(inner, &record, &decode(rpc, &body)?).await,
        Rpc::Stat | Rpc::ListDir | Rpc::MakeDir | Rpc::Move | Rpc::Remove => {
            filesystem::call(inner, &record, user, rpc, &decode(rpc, &body)?).await
        }
        Rpc::CreateWatcher => watch::polled::create(inner, &record, &decode(rpc, &body)?).await,
        Rpc::GetWatcherEvents => watch::polled::events(inner, &record, &decode(rpc, &body)?).await,
        Rpc::RemoveWatcher => watch::polled::remove(inner, &record, &decode(rpc, &body)?),
    }
}
