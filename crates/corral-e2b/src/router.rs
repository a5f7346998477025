//! Which handler answers a request: the control plane by path under
//! `/sandboxes` (and `/v2/sandboxes`), envd's services by their Connect
//! paths, `/files` and `/health`; a request addressed to another port of
//! a sandbox (`get_host(port)`) is relayed to it first, whatever its path.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request};

use crate::body::{Reply, api_error, refuse};
use crate::error::E2bError;
use crate::{Inner, control, envd, proxy};

/// Path prefixes of E2B's control plane this server does not serve.
const UNSERVED_PREFIXES: &[&str] = &[
    "/templates",
    "/v2/templates",
    "/v3/templates",
    "/snapshots",
    "/volumes",
    "/teams",
    "/secrets",
    "/access-tokens",
    "/api-keys",
    "/nodes",
];

pub(crate) async fn route(inner: Arc<Inner>, req: Request<Incoming>) -> Reply {
    if let Some(target) = proxy::target(&req) {
        return proxy::serve(inner, req, target).await;
    }
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    if let Some(rpc) = path.strip_prefix('/').and_then(envd::rpc::Rpc::from_path) {
        return envd::rpc::call(inner, rpc, req).await;
    }
    if path.contains('.') && path.matches('/').count() == 2 {
        // A Connect path not served here, refused in its client's shape.
        let shape = path
            .strip_prefix('/')
            .and_then(envd::unserved::Unserved::from_path)
            .map_or_else(|| envd::unserved::shape_asked(&req), |u| u.shape());
        return refuse(req, envd::unserved::refusal(&path, shape)).await;
    }
    match (&method, path.as_str()) {
        (&Method::GET, "/health") => return envd::files::health(&inner, &req),
        (&Method::GET, "/files") => return envd::files::download(&inner, req).await,
        (&Method::POST, "/files") => return envd::files::upload(&inner, req).await,
        _ => {}
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let tail = match segments.as_slice() {
        ["v2", "sandboxes", rest @ ..] | ["sandboxes", rest @ ..] => rest.to_vec(),
        _ => {
            let unserved = UNSERVED_PREFIXES
                .iter()
                .any(|p| path == *p || path.starts_with(&format!("{p}/")));
            let error = if unserved {
                E2bError::NotServed {
                    what: format!("{method} {path}"),
                }
            } else {
                E2bError::NoRoute {
                    method: method.to_string(),
                    path,
                }
            };
            return refuse(req, api_error(&error)).await;
        }
    };
    if let Err(e) = control::authenticate(&inner, &req) {
        return refuse(req, api_error(&e)).await;
    }
    let v2 = segments.first() == Some(&"v2");
    let result = match (&method, tail.as_slice()) {
        (&Method::POST, []) => control::create::create(&inner, req).await,
        (&Method::GET, []) => control::query::list(&inner, &req, v2).await,
        (&Method::GET, [id]) => control::query::get(&inner, id).await,
        (&Method::DELETE, [id]) => control::lifecycle::kill(&inner, id).await,
        (&Method::POST, [id, "timeout"]) => control::lifecycle::set_timeout(&inner, id, req).await,
        (&Method::POST, [id, "connect"]) => control::lifecycle::connect(&inner, id, req).await,
        (&Method::POST, [id, "pause"]) => control::lifecycle::pause(&inner, id).await,
        (&Method::POST, [id, "resume"]) => control::lifecycle::resume(&inner, id, req).await,
        _ => Err(E2bError::NotServed {
            what: format!("{method} {path}"),
        }),
    };
    result.unwrap_or_else(|e| api_error(&e))
}
