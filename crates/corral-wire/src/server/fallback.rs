//! A second protocol on the same listener: requests whose path is not
//! under `/v1/` (no wire route is) go to a [`Fallback`] when the server
//! was given one, before the wire's own authentication, and so do those
//! it claims by their headers ([`Fallback::claims`]). The fallback
//! authenticates its requests itself.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::Request;
use hyper::body::Incoming;

/// A response a fallback sends: whole or streamed.
pub type FallbackReply = hyper::Response<BoxBody<Bytes, Infallible>>;

/// The future a fallback answers with.
pub type FallbackFuture = Pin<Box<dyn Future<Output = FallbackReply> + Send>>;

/// A service answering the requests that are not wire routes.
pub trait Fallback: Send + Sync {
    /// Answers one request (it never fails: a refusal is a response).
    fn call(&self, req: Request<Incoming>) -> FallbackFuture;

    /// Whether the fallback takes `req` even though its path is a wire
    /// path (a request it knows by its headers, such as one addressed to a
    /// sandbox's port). The default claims none.
    fn claims(&self, _req: &Request<Incoming>) -> bool {
        false
    }
}

/// Whether `path` belongs to the wire (every wire route is under `/v1/`).
pub(crate) fn is_wire_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_v1_paths_are_the_wires() {
        for (path, wire) in [
            ("/v1/create", true),
            ("/v1/backend/exec", true),
            ("/v1", true),
            ("/v2/sandboxes", false),
            ("/sandboxes", false),
            ("/process.Process/Start", false),
            ("/v10/x", false),
        ] {
            assert_eq!(is_wire_path(path), wire, "{path}");
        }
    }
}
