//! `DELETE /sandboxes/{id}`, `POST /sandboxes/{id}/timeout`,
//! `POST /sandboxes/{id}/connect` (and `/v2/…/connect`), and pause and
//! resume where the backend has them.

use std::sync::Arc;

use corral_backend::{SandboxStatus, now_ms};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;

use super::create::timeout_ms;
use super::{MAX_BODY_BYTES, live_record, parse, sandbox_json};
use crate::Inner;
use crate::body::{Reply, empty_reply, json_reply, read_body};
use crate::error::{E2bError, E2bResult};

/// A body carrying a timeout in seconds.
#[derive(Debug, Deserialize)]
struct TimeoutBody {
    timeout: Option<u64>,
}

/// Kills a sandbox: 204, or 404 when this server has no such sandbox.
pub async fn kill(inner: &Arc<Inner>, id: &str) -> E2bResult<Reply> {
    if inner.sandboxes.remove(id, inner.backend.as_ref()).await? {
        Ok(empty_reply(StatusCode::NO_CONTENT))
    } else {
        Err(E2bError::NoSandbox { id: id.to_string() })
    }
}

/// Moves the end time to now plus the body's timeout: 204.
pub async fn set_timeout(inner: &Arc<Inner>, id: &str, req: Request<Incoming>) -> E2bResult<Reply> {
    let bytes = read_body(req, MAX_BODY_BYTES).await?;
    let body: TimeoutBody = parse("POST /sandboxes/{id}/timeout", &bytes)?;
    let Some(seconds) = body.timeout else {
        return Err(E2bError::invalid("timeout", "is required"));
    };
    let lifetime = timeout_ms("timeout", seconds)?;
    let (record, _) = live_record(inner, id).await?;
    record.set_end_at(now_ms() + lifetime);
    Ok(empty_reply(StatusCode::NO_CONTENT))
}

/// Connects to a sandbox, keeping it alive at least the body's timeout
/// from now (resuming it first when it is paused): 200, or 201 when it
/// was resumed.
pub async fn connect(inner: &Arc<Inner>, id: &str, req: Request<Incoming>) -> E2bResult<Reply> {
    let bytes = read_body(req, MAX_BODY_BYTES).await?;
    let body: TimeoutBody = parse("POST /sandboxes/{id}/connect", &bytes)?;
    let lifetime = match body.timeout {
        Some(seconds) => Some(timeout_ms("timeout", seconds)?),
        None => None,
    };
    let (record, status) = live_record(inner, id).await?;
    let mut answer = StatusCode::OK;
    if status == SandboxStatus::Paused {
        pause_ops(inner)?.resume(id).await?;
        answer = StatusCode::CREATED;
    }
    if let Some(lifetime) = lifetime {
        let wanted = now_ms() + lifetime;
        if wanted > record.end_at_ms() {
            record.set_end_at(wanted);
        }
    }
    Ok(json_reply(answer, &sandbox_json(inner, &record)))
}

fn pause_ops(inner: &Inner) -> E2bResult<&dyn corral_backend::PauseOps> {
    inner
        .backend
        .pause_ops()
        .ok_or_else(|| E2bError::NotServed {
            what: format!("pause and resume on the {} backend", inner.backend.name()),
        })
}

/// Pauses a sandbox: 204 (409 when it is paused already).
pub async fn pause(inner: &Arc<Inner>, id: &str) -> E2bResult<Reply> {
    let (_, status) = live_record(inner, id).await?;
    let ops = pause_ops(inner)?;
    if status == SandboxStatus::Paused {
        return Err(E2bError::Exists {
            path: format!("a pause of sandbox {id}"),
        });
    }
    ops.pause(id).await?;
    Ok(empty_reply(StatusCode::NO_CONTENT))
}

/// Resumes a paused sandbox: 201 with the `Sandbox`.
pub async fn resume(inner: &Arc<Inner>, id: &str, req: Request<Incoming>) -> E2bResult<Reply> {
    let bytes = read_body(req, MAX_BODY_BYTES).await?;
    let body: TimeoutBody = parse("POST /sandboxes/{id}/resume", &bytes)?;
    let (record, status) = live_record(inner, id).await?;
    let ops = pause_ops(inner)?;
    if status != SandboxStatus::Paused {
        return Err(E2bError::invalid(
            "state",
            format!("sandbox {id} is not paused"),
        ));
    }
    ops.resume(id).await?;
    if let Some(seconds) = body.timeout {
        record.set_end_at(now_ms() + timeout_ms("timeout", seconds)?);
    }
    Ok(json_reply(
        StatusCode::CREATED,
        &sandbox_json(inner, &record),
    ))
}
