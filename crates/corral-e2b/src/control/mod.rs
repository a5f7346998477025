//! E2B's REST control plane: JSON bodies, `{code, message}` errors, and the
//! `X-API-KEY` header, which must be the served token.

pub mod create;
pub mod lifecycle;
pub mod query;

use std::sync::Arc;

use corral_backend::SandboxStatus;
use hyper::Request;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::{E2bError, E2bResult};
use crate::state::Record;
use crate::time::rfc3339;
use crate::{ENVD_VERSION, Inner};

/// The header carrying the API key.
pub const API_KEY_HEADER: &str = "X-API-KEY";

/// The largest control-plane body, in bytes.
pub const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// The `clientID` every sandbox reports (there is one server).
pub const CLIENT_ID: &str = "corral";

/// Admits a request whose `X-API-KEY` is the served token, comparing in
/// constant time.
pub fn authenticate<B>(inner: &Inner, req: &Request<B>) -> E2bResult<()> {
    let presented = req.headers().get(API_KEY_HEADER).map(|v| v.as_bytes());
    if presents(&inner.api_key, presented) {
        Ok(())
    } else {
        Err(E2bError::Unauthenticated {
            header: API_KEY_HEADER,
        })
    }
}

/// Whether a bare header value is `token`, through the token's own
/// constant-time comparison (which takes a bearer header).
pub fn presents(token: &corral_wire::Token, presented: Option<&[u8]>) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    let mut header = b"Bearer ".to_vec();
    header.extend_from_slice(presented);
    token.admits(Some(&header))
}

/// `body` as the JSON `route` takes; an empty body is `{}`.
pub fn parse<T: DeserializeOwned>(route: &'static str, body: &[u8]) -> E2bResult<T> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| E2bError::BadJson {
        route,
        detail: e.to_string(),
    })
}

/// The record of `id` when its sandbox is still there; a sandbox the
/// backend lost (destroyed from outside, dead) is forgotten.
pub async fn live_record(inner: &Inner, id: &str) -> E2bResult<(Arc<Record>, SandboxStatus)> {
    let missing = || E2bError::NoSandbox { id: id.to_string() };
    let record = inner.sandboxes.get(id).ok_or_else(missing)?;
    match inner.backend.connect(id).await {
        Ok(info) if info.status != SandboxStatus::Dead => Ok((record, info.status)),
        Ok(_) | Err(_) => {
            let _ = inner.sandboxes.remove(id, inner.backend.as_ref()).await;
            Err(missing())
        }
    }
}

/// The `Sandbox` of create and connect.
pub fn sandbox_json(inner: &Inner, record: &Record) -> Value {
    json!({
        "templateID": record.template,
        "sandboxID": record.id,
        "clientID": CLIENT_ID,
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": record.access_token,
        "trafficAccessToken": null,
        "domain": inner.config.domain,
    })
}

/// E2B's name of a status.
pub fn state_name(status: SandboxStatus) -> &'static str {
    match status {
        SandboxStatus::Paused => "paused",
        SandboxStatus::Running | SandboxStatus::Dead => "running",
    }
}

/// The `SandboxDetail` of get (and, without the token, the listed form).
/// The size is not known to the service: the backend's default applies,
/// and it reports 0.
pub fn detail_json(inner: &Inner, record: &Record, status: SandboxStatus, listed: bool) -> Value {
    let mut value = json!({
        "templateID": record.template,
        "sandboxID": record.id,
        "clientID": CLIENT_ID,
        "startedAt": rfc3339(record.started_at_ms),
        "endAt": rfc3339(record.end_at_ms()),
        "envdVersion": ENVD_VERSION,
        "cpuCount": 0,
        "memoryMB": 0,
        "diskSizeMB": 0,
        "state": state_name(status),
        "metadata": record.metadata,
    });
    if !listed {
        value["envdAccessToken"] = json!(record.access_token);
        value["domain"] = json!(inner.config.domain);
    }
    value
}
