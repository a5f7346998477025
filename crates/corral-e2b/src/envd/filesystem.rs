//! `filesystem.Filesystem`: `Stat`, `ListDir` (with depth), `MakeDir`,
//! `Move` (see [`super::fs_move`]) and `Remove`.

use std::sync::Arc;

use crate::envd::tree_walk::walk;
use serde::Deserialize;
use serde_json::{Value, json};

use super::entry::{entry_json, stat_json};
use super::rpc::Rpc;
use super::{EnvdUser, resolve};
use crate::Inner;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// The deepest listing served.
pub const MAX_DEPTH: u32 = 16;

/// The most entries one `ListDir` answers; a tree with more is refused
/// (`resource_exhausted`, naming the limit) rather than held whole.
pub const MAX_LIST_ENTRIES: usize = 50_000;

/// The fields of every filesystem request.
#[derive(Debug, Deserialize)]
pub struct FsRequest {
    #[serde(default)]
    path: String,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    source: String,
    #[serde(default)]
    destination: String,
}

/// Answers one filesystem call.
pub async fn call(
    inner: &Arc<Inner>,
    record: &Record,
    user: EnvdUser,
    rpc: Rpc,
    req: &FsRequest,
) -> E2bResult<Value> {
    let files = inner.backend.files();
    let id = record.id.as_str();
    match rpc {
        Rpc::Stat => {
            let path = resolve("path", &req.path)?;
            Ok(json!({ "entry": stat_json(&files.stat(id, &path).await?) }))
        }
        Rpc::ListDir => {
            let path = resolve("path", &req.path)?;
            let depth = req.depth.clamp(1, MAX_DEPTH);
            let found = walk(files, id, &path, depth, MAX_LIST_ENTRIES).await?;
            let entries: Vec<Value> = found
                .iter()
                .map(|f| {
                    let e = &f.entry;
                    entry_json(&e.path, e.file_type, e.size, e.mode, None)
                })
                .collect();
            Ok(json!({ "entries": entries }))
        }
        Rpc::MakeDir => {
            let path = resolve("path", &req.path)?;
            if files.stat(id, &path).await.is_ok() {
                return Err(E2bError::Exists {
                    path: path.to_string(),
                });
            }
            super::owned::WritesFor::of(inner, user)
                .mkdir(id, &path)
                .await?;
            Ok(json!({ "entry": stat_json(&files.stat(id, &path).await?) }))
        }
        Rpc::Remove => {
            let path = resolve("path", &req.path)?;
            files.remove(id, &path, true).await?;
            Ok(json!({}))
        }
        Rpc::Move => {
            let source = resolve("source", &req.source)?;
            let destination = resolve("destination", &req.destination)?;
            super::fs_move::move_entry(files, id, &source, &destination).await
        }
        Rpc::Start
        | Rpc::Connect
        | Rpc::List
        | Rpc::SendSignal
        | Rpc::SendInput
        | Rpc::CloseStdin
        | Rpc::Update
        | Rpc::WatchDir
        | Rpc::CreateWatcher
        | Rpc::GetWatcherEvents
        | Rpc::RemoveWatcher => Err(E2bError::invalid("method", "not a filesystem call")),
    }
}
