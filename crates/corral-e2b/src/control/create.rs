//! `POST /sandboxes` and `POST /v2/sandboxes`: a sandbox from a template,
//! with its timeout, metadata, environment and network.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use corral_backend::{BackendError, CreateRequest, Environment, Labels, Network, now_ms};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use super::{MAX_BODY_BYTES, parse, sandbox_json};
use crate::body::{Reply, json_reply, read_body};
use crate::error::{E2bError, E2bResult};
use crate::state::Record;
use crate::{BASE_TEMPLATE, Inner, USER_HOME};

/// The label every sandbox made through E2B's protocol carries.
pub const E2B_LABEL: &str = "e2b";

/// The prefix of the labels holding E2B metadata.
pub const METADATA_LABEL_PREFIX: &str = "e2b/";

/// E2B's default timeout, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 15;

/// The longest timeout, in seconds (E2B's own bound: 24 hours).
pub const MAX_TIMEOUT_SECS: u64 = 24 * 3600;

/// The body of a create (the fields this server reads; others are ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSandbox {
    #[serde(rename = "templateID")]
    template_id: String,
    timeout: Option<u64>,
    #[serde(default)]
    auto_pause: bool,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
    network: Option<NetworkBody>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: BTreeMap<String, String>,
    mcp: Option<Value>,
    #[serde(default)]
    volume_mounts: Vec<Value>,
}

/// `network` of a create.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkBody {
    #[serde(default)]
    allow_out: Vec<String>,
    #[serde(default)]
    deny_out: Vec<String>,
    allow_public_traffic: Option<bool>,
}

/// The timeout of a create, connect or `/timeout`, checked.
pub fn timeout_ms(field: &str, seconds: u64) -> E2bResult<u64> {
    if seconds > MAX_TIMEOUT_SECS {
        return Err(E2bError::invalid(
            field,
            format!("{seconds} seconds is longer than the {MAX_TIMEOUT_SECS} allowed"),
        ));
    }
    Ok(seconds * 1000)
}

/// The labels holding `metadata`, each checked.
pub fn metadata_labels(metadata: &BTreeMap<String, String>) -> E2bResult<Labels> {
    let mut labels = Labels::new();
    for (k, v) in metadata {
        let key = format!("{METADATA_LABEL_PREFIX}{k}");
        labels.insert(key, v.clone()).map_err(|_| {
            E2bError::invalid(
                format!("metadata.{k}"),
                "a key must be 1-124 characters of [A-Za-z0-9._/-], a value at most 1024 bytes with no control characters",
            )
        })?;
    }
    Ok(labels)
}

fn refuse_unserved(body: &NewSandbox) -> E2bResult<()> {
    let unserved = if body.auto_pause {
        Some("autoPause")
    } else if body.mcp.as_ref().is_some_and(|m| !m.is_null()) {
        Some("mcp")
    } else if !body.volume_mounts.is_empty() {
        Some("volumeMounts")
    } else if body
        .network
        .as_ref()
        .is_some_and(|n| !n.allow_out.is_empty())
    {
        Some("network.allowOut")
    } else if body
        .network
        .as_ref()
        .is_some_and(|n| !n.deny_out.is_empty())
    {
        Some("network.denyOut")
    } else if body
        .network
        .as_ref()
        .is_some_and(|n| n.allow_public_traffic == Some(false))
    {
        // Every sandbox port is public here (see the proxy module).
        Some("network.allowPublicTraffic: false")
    } else {
        None
    };
    match unserved {
        Some(what) => Err(E2bError::NotServed {
            what: what.to_string(),
        }),
        None => Ok(()),
    }
}

/// Creates a sandbox: 201 with the `Sandbox`.
pub async fn create(inner: &Arc<Inner>, req: Request<Incoming>) -> E2bResult<Reply> {
    let bytes = read_body(req, MAX_BODY_BYTES).await?;
    let body: NewSandbox = parse("POST /sandboxes", &bytes)?;
    let image = template_image(&body.template_id)?;
    refuse_unserved(&body)?;
    let lifetime_ms = timeout_ms("timeout", body.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS))?;
    let mut labels = metadata_labels(&body.metadata)?;
    // The mark the list looks for; the template is the record's.
    labels
        .insert(E2B_LABEL, BASE_TEMPLATE)
        .map_err(|e| E2bError::invalid("metadata", e.to_string()))?;
    let network = match body.allow_internet_access {
        Some(false) => Network::None,
        Some(true) | None => Network::Default,
    };
    // Made here, once: the backend takes the environment as it is.
    let env = Environment::try_from(body.env_vars)
        .map_err(|e| E2bError::invalid("envVars", e.to_string()))?;
    let request = CreateRequest {
        env,
        network,
        labels,
        image,
        ..CreateRequest::default()
    };
    let info = inner
        .backend
        .create(request)
        .await
        .map_err(|e| template_refusal(&body.template_id, e))?;
    if let Err(e) = ensure_home(inner, &info.id).await {
        let _ = inner.backend.destroy(&info.id).await;
        return Err(e);
    }
    // Derived, never stored: a restarted server gives the same one.
    let access_token = crate::access_token::derive(&inner.api_key, &info.id);
    let access_check = match corral_wire::Token::new(access_token.clone()) {
        Ok(check) => check,
        Err(e) => {
            let _ = inner.backend.destroy(&info.id).await;
            return Err(E2bError::invalid("envdAccessToken", e.to_string()));
        }
    };
    let started = now_ms();
    let record = Arc::new(Record {
        id: info.id.clone(),
        template: body.template_id,
        seq: inner.seq.fetch_add(1, Ordering::Relaxed),
        access_token,
        access_check,
        metadata: body.metadata,
        started_at_ms: started,
        end_at: tokio::sync::watch::channel(started + lifetime_ms).0,
        processes: Default::default(),
        next_pid: AtomicU32::new(1000),
    });
    let answer = sandbox_json(inner, &record);
    inner.sandboxes.insert(record, Arc::clone(&inner.backend));
    if let Err(e) = inner.sandboxes.persist() {
        // A sandbox a restart would lose is not made.
        let _ = inner
            .sandboxes
            .remove(&info.id, inner.backend.as_ref())
            .await;
        return Err(e.into());
    }
    Ok(json_reply(StatusCode::CREATED, &answer))
}

/// The longest template name taken (an image reference of the backend).
pub const MAX_TEMPLATE_BYTES: usize = 256;

/// The image a template names: `base` is the backend's default image
/// (`None`); any other template is the name of one of the backend's images
/// (on linux, `corral image ls`; `host` is the built-in one).
pub fn template_image(template: &str) -> E2bResult<Option<String>> {
    if template == BASE_TEMPLATE {
        return Ok(None);
    }
    if template.is_empty()
        || template.len() > MAX_TEMPLATE_BYTES
        || template.chars().any(char::is_control)
    {
        return Err(E2bError::invalid(
            "templateID",
            format!("a template is 1-{MAX_TEMPLATE_BYTES} bytes without control characters"),
        ));
    }
    Ok(Some(template.to_string()))
}

/// A failed create as the SDK should see it: an image the backend does not
/// hold, or a backend without images, is an unknown template (404); any
/// other failure is the backend's own.
fn template_refusal(template: &str, e: BackendError) -> E2bError {
    let unknown = template != BASE_TEMPLATE
        && (matches!(
            &e,
            BackendError::Create(corral_backend::CreateError::ImageNotFound { .. })
        ) || e.code() == corral_backend::ErrorCode::Unsupported);
    if unknown {
        E2bError::UnknownTemplate {
            template: template.to_string(),
            detail: e.message(),
        }
    } else {
        E2bError::Backend(e)
    }
}

/// Makes the user's home where the image has none, so that relative paths
/// and the default working directory resolve on every backend.
async fn ensure_home(inner: &Inner, id: &str) -> E2bResult<()> {
    let files = inner.backend.files();
    let home = crate::envd::resolve("home", USER_HOME)?;
    if files.stat(id, &home).await.is_err() {
        files.mkdir(id, &home, true).await?;
    }
    Ok(())
}
