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

/// E2B's size fields of `size`: whole CPUs (a fraction rounded up),
/// memory and disk in MiB (rounded down), and 0 for a field the backend
/// enforces no limit on (the SDKs' models require integers; 0 reads as
/// "no limit", never as a real size of nothing).
pub fn size_json(size: &corral_backend::Size) -> Value {
    const MIB: u64 = 1 << 20;
    let cpus = size.cpus.map_or(0, |c| c.ceil().max(0.0) as u64);
    json!({
        "cpuCount": cpus,
        "memoryMB": size.memory_bytes.map_or(0, |b| b / MIB),
        "diskSizeMB": size.disk_bytes.map_or(0, |b| b / MIB),
    })
}

/// The `SandboxDetail` of get (and, without the token, the listed form).
/// A sandbox made through E2B's protocol asks for no size, so it has the
/// backend's default size ([`corral_backend::Backend::default_size`]).
pub fn detail_json(inner: &Inner, record: &Record, status: SandboxStatus, listed: bool) -> Value {
    let size = size_json(&inner.backend.default_size());
    let mut value = json!({
        "templateID": record.template,
        "sandboxID": record.id,
        "clientID": CLIENT_ID,
        "startedAt": rfc3339(record.started_at_ms),
        "endAt": rfc3339(record.end_at_ms()),
        "envdVersion": ENVD_VERSION,
        "cpuCount": size["cpuCount"],
        "memoryMB": size["memoryMB"],
        "diskSizeMB": size["diskSizeMB"],
        "state": state_name(status),
        "metadata": record.metadata,
    });
    if !listed {
        value["envdAccessToken"] = json!(record.access_token);
        value["domain"] = json!(inner.config.domain);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::size_json;
    use corral_backend::Size;
    use serde_json::json;

    #[test]
    fn sizes_are_whole_cpus_and_mib_and_0_without_a_limit() {
        let rows = [
            (Size::default(), json!([0, 0, 0])),
            (
                Size {
                    cpus: Some(1.0),
                    memory_bytes: Some(1 << 30),
                    disk_bytes: Some(1 << 30),
                },
                json!([1, 1024, 1024]),
            ),
            (
                Size {
                    cpus: Some(0.5),
                    memory_bytes: Some((1 << 20) + 1),
                    disk_bytes: None,
                },
                json!([1, 1, 0]),
            ),
        ];
        for (size, want) in rows {
            let got = size_json(&size);
            let got = json!([got["cpuCount"], got["memoryMB"], got["diskSizeMB"]]);
            assert_eq!(got, want, "{size:?}");
        }
    }
}
