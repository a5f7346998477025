//! The unary members: decode the request, call the provider, encode the
//! result (or its contract error).

use std::sync::Arc;

use corral_contract::{
    ActiveWriteRequest, CleanupRequest, CloneSnapshotRequest, ExecuteRequest, Handoff,
    ListDirRequest, ListProjectDirRequest, ReadFileRequest, ReadFilesRequest, ReleaseRequest,
    ResumeRequest, SandboxError, SandboxInstance, SandboxProvider, SandboxProvisionRequest,
    SnapshotRequest, WriteFileRequest,
};
use hyper::{Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Shared;
use super::http::{Body, json, provider_error, refuse};
use crate::protocol::{
    HandoffReply, HandoffTicket, InstanceBody, Refusal, Route, SnapshotBody, TransactionReply,
    TransactionTicket,
};

type Reply = Response<Body>;

/// The request body is not the route's request type.
struct Malformed;

/// Decodes a request body with the decoder whose answers the author kit's
/// vectors record. The reply to a refusal is the route's contract error,
/// which has no member for the field the decoder names, so the field is
/// not sent (see `docs/wire.md`).
fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Malformed> {
    crate::kit::decode::decode_body(body).map_err(|_| Malformed)
}

fn ok<T: Serialize>(value: &T) -> Reply {
    match serde_json::to_vec(value) {
        Ok(body) => json(StatusCode::OK, body),
        Err(_) => json(StatusCode::INTERNAL_SERVER_ERROR, b"null".to_vec()),
    }
}

fn reply<T: Serialize>(result: Result<T, SandboxError>) -> Reply {
    match result {
        Ok(value) => ok(&value),
        Err(e) => provider_error(&e),
    }
}

/// Holds the compensation and replies `{value, handoff}`.
fn handoff<P, T: Serialize>(shared: &Shared<P>, result: Result<Handoff<T>, SandboxError>) -> Reply {
    match result {
        Ok(h) => {
            let (value, rollback) = h.into_parts();
            let handoff = shared.registry.hold(rollback);
            ok(&HandoffReply { value, handoff })
        }
        Err(e) => provider_error(&e),
    }
}

/// Like [`handoff`], and remembers the instance for the shutdown.
fn instance<P>(
    shared: &Shared<P>,
    result: Result<Handoff<SandboxInstance>, SandboxError>,
) -> Reply {
    if let Ok(h) = &result {
        shared.registry.track(&h.value);
    }
    handoff(shared, result)
}

pub(crate) async fn call<P: SandboxProvider + 'static>(
    shared: &Arc<Shared<P>>,
    route: Route,
    body: &[u8],
) -> Reply {
    match dispatch(shared, route, body).await {
        Ok(reply) => reply,
        Err(Malformed) => refuse(Some(route), Refusal::MalformedBody),
    }
}

async fn dispatch<P: SandboxProvider + 'static>(
    shared: &Arc<Shared<P>>,
    route: Route,
    body: &[u8],
) -> Result<Reply, Malformed> {
    let p = &shared.provider;
    Ok(match route {
        Route::Capabilities => {
            decode::<serde_json::Map<String, serde_json::Value>>(body)?;
            ok(p.capabilities())
        }
        Route::Provision => {
            let r: SandboxProvisionRequest = decode(body)?;
            instance(shared, p.provision(r).await)
        }
        Route::WriteFile => reply(p.write_file(decode::<WriteFileRequest>(body)?).await),
        Route::BeginActiveWrite => {
            let r: ActiveWriteRequest = decode(body)?;
            match p.begin_active_write(r).await {
                Ok(tx) => {
                    let tx: Arc<dyn corral_contract::ActiveWriteTransaction> = Arc::from(tx);
                    let out = TransactionReply {
                        transaction_id: tx.transaction_id().clone(),
                        state: tx.state(),
                    };
                    shared.registry.open_transaction(tx);
                    ok(&out)
                }
                Err(e) => provider_error(&e),
            }
        }
        Route::Activate => {
            let r: InstanceBody = decode(body)?;
            instance(shared, p.activate(r.instance_id).await)
        }
        Route::Execute => reply(p.execute(decode::<ExecuteRequest>(body)?).await),
        Route::ReadFile => reply(p.read_file(decode::<ReadFileRequest>(body)?).await),
        Route::ReadFiles => reply(p.read_files(decode::<ReadFilesRequest>(body)?).await),
        Route::ListDir => reply(p.list_dir(decode::<ListDirRequest>(body)?).await),
        Route::ListProjectDir => reply(
            p.list_project_dir(decode::<ListProjectDirRequest>(body)?)
                .await,
        ),
        Route::Snapshot => handoff(shared, p.snapshot(decode::<SnapshotRequest>(body)?).await),
        Route::CloneSnapshot => {
            let r: CloneSnapshotRequest = decode(body)?;
            handoff(shared, p.clone_snapshot(r).await)
        }
        Route::Release => {
            let r: ReleaseRequest = decode(body)?;
            let id = r.instance_id.clone();
            let result = p.release(r).await;
            if result.is_ok() {
                shared.registry.untrack(&id);
            }
            handoff(shared, result)
        }
        Route::Resume => instance(shared, p.resume(decode::<ResumeRequest>(body)?).await),
        Route::Destroy => {
            let r: InstanceBody = decode(body)?;
            let result = p.destroy(r.instance_id.clone()).await;
            if result.is_ok() {
                shared.registry.untrack(&r.instance_id);
            }
            reply(result)
        }
        Route::DestroySnapshot => {
            let r: SnapshotBody = decode(body)?;
            reply(p.destroy_snapshot(r.snapshot_id).await)
        }
        Route::Cleanup => {
            let result = p.cleanup(decode::<CleanupRequest>(body)?).await;
            if let Ok(swept) = &result {
                swept
                    .instances
                    .iter()
                    .for_each(|id| shared.registry.untrack(id));
            }
            reply(result)
        }
        Route::OpenProcess => refuse(Some(route), Refusal::UnknownRoute),
        Route::HandoffRollback(_) => {
            let t: HandoffTicket = decode(body)?;
            match shared.registry.take(&t.handoff) {
                Some(rollback) => reply(rollback.rollback().await),
                // Asked again after a lost response: it already settled.
                None => ok(&()),
            }
        }
        Route::HandoffSettle(_) => {
            let t: HandoffTicket = decode(body)?;
            drop(shared.registry.take(&t.handoff));
            ok(&())
        }
        Route::ActiveWriteCommit | Route::ActiveWriteRollback => {
            let t: TransactionTicket = decode(body)?;
            let Some(tx) = shared.registry.transaction(&t.transaction_id) else {
                return Ok(refuse(Some(route), Refusal::UnknownTicket));
            };
            let result = if route == Route::ActiveWriteCommit {
                // The wire client invoked its dispatch marker before it
                // sent this request; the server-side marker is a no-op.
                tx.commit(&ServerMarker).await
            } else {
                tx.rollback().await
            };
            let out = TransactionReply {
                transaction_id: t.transaction_id.clone(),
                state: tx.state(),
            };
            shared.registry.settle_transaction(&t.transaction_id);
            match result {
                Ok(()) => ok(&out),
                Err(e) => provider_error(&e),
            }
        }
    })
}

/// The server's dispatch marker: the client's marker already ran, before
/// the commit request left it (see `docs/wire.md`).
struct ServerMarker;

impl corral_contract::DispatchMarker for ServerMarker {
    fn dispatched(&self, _: &corral_contract::TransactionId) {}
}
