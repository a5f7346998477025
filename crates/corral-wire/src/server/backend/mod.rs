//! The backend routes: decode the request, call the served backend,
//! encode the result (or its [`BackendError`], HTTP 422). `exec` streams
//! (see [`exec`]); `read` is bounded (see [`read`]).

mod exec;
mod read;

pub(crate) use exec::Runs;

use std::sync::Arc;

use corral_backend::{Backend, BackendError, BatchFile, ErrorCode, PlatformError, sandbox_path};
use corral_contract::Octets;
use hyper::{Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::http::{Reply, json, refuse_with};
use crate::kit::decode::{BodyRefusal, decode_body};
use crate::protocol::backend::{
    BackendRoute, BatchBody, BytesBody, Description, KeyBody, LabelsBody, MkdirBody, PathBody,
    PortBody, RangeBody, RemoveBody, RunRef, SandboxRef, SnapshotOf, SnapshotRef, TreeBody,
    WriteBody, asks_for_binds, carried,
};
use crate::protocol::{ErrorBody, Refusal};

/// The request body is not the route's request type: why, as the decoder
/// says it (the field, and the rule a value broke, such as an environment
/// key or a label no request may carry).
struct Malformed(BodyRefusal);

impl Malformed {
    /// The refusal in one line: the field, then the decoder's message.
    fn line(&self) -> String {
        let line = match &self.0.field {
            Some(field) => format!("{field}: {}", self.0.message),
            None => self.0.message.clone(),
        };
        line.replace(['\n', '\r'], " ")
    }
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Malformed> {
    decode_body(body).map_err(Malformed)
}

/// A backend error as the backend returned it (422).
pub(crate) fn backend_error(error: &BackendError) -> Response<super::http::Body> {
    json(
        StatusCode::UNPROCESSABLE_ENTITY,
        serde_json::to_vec(&ErrorBody::from(error)).unwrap_or_default(),
    )
}

fn reply<T: Serialize>(result: Result<T, BackendError>) -> Reply {
    let response = match result.and_then(|value| {
        serde_json::to_vec(&value).map_err(|e| {
            BackendError::from(PlatformError::Defective {
                what: format!("encoding a reply: {e}"),
            })
        })
    }) {
        Ok(body) => json(StatusCode::OK, body),
        Err(e) => backend_error(&e),
    };
    super::http::boxed(response)
}

fn bytes(result: Result<Vec<u8>, BackendError>) -> Reply {
    reply(result.map(|bytes| BytesBody {
        bytes: Octets::new(bytes),
    }))
}

/// `unsupported` for a route whose member the served backend does not
/// declare.
fn undeclared(backend: &dyn Backend, route: BackendRoute) -> BackendError {
    BackendError::unsupported(backend.name(), format!("{} is not declared", route.name()))
}

pub(crate) async fn call(
    backend: &Arc<dyn Backend>,
    runs: &Arc<Runs>,
    route: BackendRoute,
    body: &[u8],
) -> Reply {
    match dispatch(backend, runs, route, body).await {
        Ok(reply) => reply,
        // The body says why, as an error body of `invalid_input`, so the
        // client can show the one line.
        Err(malformed) => {
            let body = ErrorBody {
                code: ErrorCode::InvalidInput,
                message: malformed.line(),
                missing_sandbox: None,
            };
            super::http::boxed(refuse_with(
                Refusal::MalformedBody,
                serde_json::to_vec(&body).unwrap_or_default(),
            ))
        }
    }
}

async fn dispatch(
    backend: &Arc<dyn Backend>,
    runs: &Arc<Runs>,
    route: BackendRoute,
    body: &[u8],
) -> Result<Reply, Malformed> {
    let b = &**backend;
    Ok(match route {
        BackendRoute::Describe => reply(Ok(Description {
            name: b.name().to_owned(),
            key_mode: b.key_mode(),
            capabilities: carried(b.capabilities()),
        })),
        BackendRoute::Create if asks_for_binds(body) => {
            reply::<()>(Err(BackendError::unsupported(
                b.name(),
                "bind host directories for a remote caller (binds, -v/--volume)",
            )))
        }
        BackendRoute::Create => reply(b.create(decode(body)?).await),
        BackendRoute::Find => reply(b.find(&decode::<KeyBody>(body)?.key).await),
        BackendRoute::Connect => reply(b.connect(&decode::<SandboxRef>(body)?.id).await),
        BackendRoute::List => reply(b.list(&decode::<LabelsBody>(body)?.labels).await),
        BackendRoute::Destroy => reply(b.destroy(&decode::<SandboxRef>(body)?.id).await),
        BackendRoute::Exec => exec::start(backend, runs, decode(body)?),
        BackendRoute::AbortRun => {
            runs.abort(decode::<RunRef>(body)?.run);
            reply(Ok(()))
        }
        BackendRoute::Read => {
            let p: PathBody = decode(body)?;
            bytes(async { read::bounded(b, &p.id, &sandbox_path("path", &p.path)?).await }.await)
        }
        BackendRoute::Write => {
            let w: WriteBody = decode(body)?;
            reply(
                async {
                    b.files()
                        .write(&w.id, &sandbox_path("path", &w.path)?, &w.bytes, w.mode)
                        .await
                }
                .await,
            )
        }
        BackendRoute::ListDir => {
            let p: PathBody = decode(body)?;
            reply(async { b.files().list(&p.id, &sandbox_path("path", &p.path)?).await }.await)
        }
        BackendRoute::Stat => {
            let p: PathBody = decode(body)?;
            reply(async { b.files().stat(&p.id, &sandbox_path("path", &p.path)?).await }.await)
        }
        BackendRoute::Remove => {
            let r: RemoveBody = decode(body)?;
            reply(
                async {
                    b.files()
                        .remove(&r.id, &sandbox_path("path", &r.path)?, r.recursive)
                        .await
                }
                .await,
            )
        }
        BackendRoute::Mkdir => {
            let m: MkdirBody = decode(body)?;
            reply(
                async {
                    b.files()
                        .mkdir(&m.id, &sandbox_path("path", &m.path)?, m.parents)
                        .await
                }
                .await,
            )
        }
        BackendRoute::ReadRange => {
            let r: RangeBody = decode(body)?;
            bytes(match b.files().ranged() {
                Some(ranged) => {
                    async {
                        ranged
                            .read_range(&r.id, &sandbox_path("path", &r.path)?, r.offset, r.len)
                            .await
                    }
                    .await
                }
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::PreviewUrl => {
            let p: PortBody = decode(body)?;
            reply(b.preview_url(&p.id, p.port).await)
        }
        BackendRoute::Native => reply(b.native(&decode::<SandboxRef>(body)?.id).await),
        BackendRoute::Pause | BackendRoute::Resume => {
            let id = decode::<SandboxRef>(body)?.id;
            reply(match b.pause_ops() {
                Some(ops) if route == BackendRoute::Pause => ops.pause(&id).await,
                Some(ops) => ops.resume(&id).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::Snapshot => {
            let s: SnapshotOf = decode(body)?;
            reply(match b.snapshot_ops() {
                Some(ops) => ops.snapshot(&s.id, &s.labels).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::DeleteSnapshot => {
            let s: SnapshotRef = decode(body)?;
            reply(match b.snapshot_ops() {
                Some(ops) => ops.delete_snapshot(&s.snapshot_id).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::ListSnapshots => {
            let l: LabelsBody = decode(body)?;
            reply(match b.snapshot_ops() {
                Some(ops) => ops.list_snapshots(&l.labels).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::CloneSnapshot => {
            let s: SnapshotRef = decode(body)?;
            reply(match b.snapshot_clone_ops() {
                Some(ops) => ops.clone_snapshot(&s.snapshot_id, &s.labels).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::Usage => {
            let id = decode::<SandboxRef>(body)?.id;
            reply(match b.usage_ops() {
                Some(ops) => ops.usage(&id).await,
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::ListTree => {
            let t: TreeBody = decode(body)?;
            let max = usize::try_from(t.max_entries).unwrap_or(usize::MAX);
            reply(match b.tree_list_ops() {
                Some(ops) => {
                    async {
                        ops.list_tree(&t.id, &sandbox_path("root", &t.root)?, max)
                            .await
                    }
                    .await
                }
                None => Err(undeclared(b, route)),
            })
        }
        BackendRoute::WriteBatch => {
            let w: BatchBody = decode(body)?;
            let files: Result<Vec<BatchFile>, BackendError> = w
                .files
                .into_iter()
                .map(|f| {
                    Ok(BatchFile {
                        path: sandbox_path("path", &f.path)?,
                        bytes: f.bytes.into_vec(),
                        mode: f.mode,
                    })
                })
                .collect();
            reply(match (b.batch_write_ops(), files) {
                (Some(ops), Ok(files)) => ops.write_batch(&w.id, files).await,
                (Some(_), Err(e)) => Err(e),
                (None, _) => Err(undeclared(b, route)),
            })
        }
    })
}

#[cfg(test)]
mod decode_tests;
