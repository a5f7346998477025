//! One HTTP request: authenticate, check the revision, bound the body,
//! route.

use super::body::{BodyRefusal, read_bounded};
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use corral_contract::{SandboxError, SandboxProvider};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::{Shared, backend, process, unary};
use crate::protocol::backend::BackendRoute;
use crate::protocol::{CONTRACT_REVISION, REFUSAL_HEADER, REVISION_HEADER, Refusal, Route};

/// A response body.
pub(crate) type Body = Full<Bytes>;

/// A response as the connection sends it: whole, or streamed (`exec` of
/// the backend routes).
pub(crate) type Reply = Response<BoxBody<Bytes, Infallible>>;

/// A whole response as a [`Reply`].
pub(crate) fn boxed(response: Response<Body>) -> Reply {
    response.map(|body| body.map_err(|never| match never {}).boxed())
}

/// A JSON response with the revision header.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(REVISION_HEADER, HeaderValue::from_static(CONTRACT_REVISION));
    response
}

/// A contract error as the provider returned it (422).
pub(crate) fn provider_error(error: &SandboxError) -> Response<Body> {
    json(
        StatusCode::UNPROCESSABLE_ENTITY,
        serde_json::to_vec(error).unwrap_or_default(),
    )
}

/// A refusal before the provider saw the request: the status, the
/// refusal header, and a contract error naming the route's operation.
pub(crate) fn refuse(route: Option<Route>, refusal: Refusal) -> Response<Body> {
    let body = match route {
        Some(route) => serde_json::to_vec(&SandboxError::operation_failed(
            route.operation(),
            refusal.reason(),
        ))
        .unwrap_or_default(),
        None => b"null".to_vec(),
    };
    refuse_with(refusal, body)
}

/// A refusal with `body` as its body: the status, the refusal header, and
/// `Connection: close` for a caller without the token.
pub(crate) fn refuse_with(refusal: Refusal, body: Vec<u8>) -> Response<Body> {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = json(status, body);
    response
        .headers_mut()
        .insert(REFUSAL_HEADER, HeaderValue::from_static(refusal.as_str()));
    // A caller without the token keeps no connection: otherwise one tiny
    // request every few seconds would hold a place of the connection cap
    // for ever.
    if refusal == Refusal::Unauthenticated {
        response
            .headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

pub(crate) async fn handle<P: SandboxProvider + 'static>(
    shared: Arc<Shared<P>>,
    req: Request<Incoming>,
) -> Result<Reply, Infallible> {
    // Authentication comes first: an unauthenticated caller learns nothing,
    // not even which paths exist.
    let path = req.uri().path();
    if let Some(fallback) = shared.fallback.as_ref()
        && (!super::fallback::is_wire_path(path) || fallback.claims(&req))
    {
        return Ok(fallback.call(req).await);
    }
    let route = Route::from_path(path);
    let backend_route = BackendRoute::from_path(path);
    let authorization = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    if !shared.token.admits(authorization) {
        return Ok(boxed(refuse(route, Refusal::Unauthenticated)));
    }
    let revision = req.headers().get(REVISION_HEADER).map(|v| v.as_bytes());
    let revision_ok = revision == Some(CONTRACT_REVISION.as_bytes());
    if let Some(backend_route) = backend_route {
        // Served only when the server was given its provider's backend.
        let Some(served) = shared.backend.clone() else {
            return Ok(boxed(refuse(None, Refusal::UnknownRoute)));
        };
        if !revision_ok {
            return Ok(boxed(refuse(None, Refusal::RevisionMismatch)));
        }
        if req.method() != Method::POST {
            return Ok(boxed(refuse(None, Refusal::UnknownRoute)));
        }
        let deadline = shared.limits.body_deadline;
        let body = match bounded_body(req, backend_route.max_body_bytes(), deadline).await {
            Ok(body) => body,
            Err(refusal) => return Ok(boxed(refuse(None, refusal))),
        };
        return Ok(backend::call(&served, &shared.runs, backend_route, &body).await);
    }
    let Some(route) = route else {
        return Ok(boxed(refuse(None, Refusal::UnknownRoute)));
    };
    if !revision_ok {
        return Ok(boxed(refuse(Some(route), Refusal::RevisionMismatch)));
    }
    if route == Route::OpenProcess {
        if req.method() != Method::GET {
            return Ok(boxed(refuse(Some(route), Refusal::UnknownRoute)));
        }
        return Ok(boxed(process::upgrade(shared, req)));
    }
    if req.method() != Method::POST {
        return Ok(boxed(refuse(Some(route), Refusal::UnknownRoute)));
    }
    let deadline = shared.limits.body_deadline;
    let body = match bounded_body(req, route.max_body_bytes(), deadline).await {
        Ok(body) => body,
        Err(refusal) => return Ok(boxed(refuse(Some(route), refusal))),
    };
    Ok(boxed(unary::call(&shared, route, &body).await))
}

/// The request's body within the route's bounds (see [`read_bounded`]); a
/// body that has not arrived by the deadline is refused as malformed: it is
/// not the route's request.
async fn bounded_body(
    req: Request<Incoming>,
    limit: u64,
    deadline: std::time::Duration,
) -> Result<Bytes, Refusal> {
    read_bounded(req, limit, deadline)
        .await
        .map_err(|refusal| match refusal {
            BodyRefusal::TooLarge { .. } => Refusal::BodyTooLarge,
            BodyRefusal::Unread => Refusal::MalformedBody,
        })
}
