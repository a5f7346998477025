//! One backend route call: the request as JSON, the reply decoded, every
//! failure a [`BackendError`] naming the server and the member.

use bytes::Bytes;
use corral_backend::{BackendError, ErrorCode, PlatformError, RequestError};
use hyper::StatusCode;
use hyper::http::{HeaderMap, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::pool::ReplyBody;
use crate::client::transport::{
    ExchangeFailure, MAX_RESPONSE_BYTES, ReadFailure, SendFailure, Transport, read_bounded,
};
use crate::protocol::backend::BackendRoute;
use crate::protocol::{CONTRACT_REVISION, ErrorBody, REFUSAL_HEADER, REVISION_HEADER, Refusal};

/// The server of a remote backend.
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) transport: Transport,
}

impl Remote {
    /// `remote http://HOST:PORT: MEMBER`: what every error of a call names.
    pub(crate) fn context(&self, route: BackendRoute) -> String {
        format!("remote {}: {}", self.transport.endpoint, route.name())
    }

    /// What the server answered, known by `code` and `what` only:
    /// `remote http://HOST:PORT: MEMBER: what`.
    fn relayed(&self, route: BackendRoute, code: ErrorCode, what: &str) -> BackendError {
        BackendError::relayed(code, format!("{}: {what}", self.context(route)))
    }

    /// The server cannot be reached, or the connection broke.
    pub(crate) fn unavailable(&self, route: BackendRoute, detail: &str) -> BackendError {
        PlatformError::Unavailable {
            what: self.context(route),
            detail: detail.to_string(),
        }
        .into()
    }

    /// The server's reply is not what the protocol says.
    pub(crate) fn malformed(
        &self,
        route: BackendRoute,
        detail: impl std::fmt::Display,
    ) -> BackendError {
        PlatformError::Malformed {
            what: self.context(route),
            detail: detail.to_string(),
        }
        .into()
    }

    /// Sends `body` to `route` and decodes the reply.
    pub(crate) async fn call<Req: Serialize, Res: DeserializeOwned>(
        &self,
        route: BackendRoute,
        body: &Req,
    ) -> Result<Res, BackendError> {
        let body = self.encode(route, body)?;
        let (parts, bytes) = self
            .transport
            .exchange(&route.path(), body, route.idempotent())
            .await
            .map_err(|failure| match failure {
                ExchangeFailure::Send(failure) => self.unsent(route, failure),
                ExchangeFailure::TooLarge => self.too_large(route),
            })?;
        self.check_revision(route, &parts.headers)?;
        if let Some(refusal) = refusal_of(&parts.headers) {
            return Err(self.refused(route, refusal, &bytes));
        }
        if parts.status != StatusCode::OK {
            return Err(self.failure(route, parts.status, &bytes));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(route, format_args!("malformed reply: {e}")))
    }

    /// Sends `body` to `route`: a reply of the same revision, whatever its
    /// status, with its body unread.
    pub(crate) async fn open<Req: Serialize>(
        &self,
        route: BackendRoute,
        body: &Req,
    ) -> Result<Response<ReplyBody>, BackendError> {
        let body = self.encode(route, body)?;
        let response = self
            .transport
            .send(&route.path(), body, route.idempotent())
            .await
            .map_err(|failure| self.unsent(route, failure))?;
        self.check_revision(route, response.headers())?;
        Ok(response)
    }

    fn encode<Req: Serialize>(
        &self,
        route: BackendRoute,
        body: &Req,
    ) -> Result<Vec<u8>, BackendError> {
        serde_json::to_vec(body).map_err(|e| self.unsendable(route, format!("encoding it: {e}")))
    }

    fn unsendable(&self, route: BackendRoute, detail: String) -> BackendError {
        RequestError::Unsendable {
            what: self.context(route),
            detail,
        }
        .into()
    }

    fn unsent(&self, route: BackendRoute, failure: SendFailure) -> BackendError {
        match failure {
            SendFailure::Unavailable => self.unavailable(
                route,
                "the server cannot be reached, or the connection broke",
            ),
            SendFailure::Request(e) => self.unsendable(route, e),
        }
    }

    fn too_large(&self, route: BackendRoute) -> BackendError {
        self.malformed(
            route,
            format_args!("a reply larger than {MAX_RESPONSE_BYTES} bytes"),
        )
    }

    fn check_revision(&self, route: BackendRoute, headers: &HeaderMap) -> Result<(), BackendError> {
        let revision = headers.get(REVISION_HEADER).and_then(|v| v.to_str().ok());
        if revision != Some(CONTRACT_REVISION) {
            return Err(self.malformed(
                route,
                format_args!(
                    "the server speaks revision {}, this client {CONTRACT_REVISION}",
                    revision.unwrap_or("none")
                ),
            ));
        }
        Ok(())
    }

    /// The whole body of a reply, bounded.
    pub(crate) async fn collect(
        &self,
        route: BackendRoute,
        response: Response<ReplyBody>,
    ) -> Result<Bytes, BackendError> {
        let refusal = refusal_of(response.headers());
        let bytes = read_bounded(response.into_body())
            .await
            .map_err(|failure| match failure {
                ReadFailure::TooLarge => self.too_large(route),
                ReadFailure::Broken => self.unavailable(route, "the connection broke"),
            })?;
        if let Some(refusal) = refusal {
            return Err(self.refused(route, refusal, &bytes));
        }
        Ok(bytes)
    }

    /// The error of a reply that is not `200`: the backend's own (422, an
    /// [`ErrorBody`]), or a refusal before the backend saw the request.
    pub(crate) fn failure(
        &self,
        route: BackendRoute,
        status: StatusCode,
        body: &[u8],
    ) -> BackendError {
        if status == StatusCode::UNPROCESSABLE_ENTITY
            && let Ok(error) = serde_json::from_slice::<ErrorBody>(body)
        {
            return error.into();
        }
        self.relayed(route, ErrorCode::Provider, &format!("HTTP {status}"))
    }

    /// The error of a refusal; a malformed body's says why when the server
    /// said it (an [`ErrorBody`] whose message is one line).
    fn refused(&self, route: BackendRoute, refusal: Refusal, body: &[u8]) -> BackendError {
        if refusal == Refusal::MalformedBody
            && let Ok(said) = serde_json::from_slice::<ErrorBody>(body)
            && !said.message.contains(['\n', '\r'])
        {
            let what = format!("the server could not decode the request: {}", said.message);
            return self.relayed(route, ErrorCode::InvalidInput, &what);
        }
        let (code, what) = match refusal {
            Refusal::Unauthenticated => (ErrorCode::Auth, "the server refused the token"),
            Refusal::BodyTooLarge => (
                ErrorCode::InvalidInput,
                "the request is larger than the server admits",
            ),
            Refusal::MalformedBody => (
                ErrorCode::InvalidInput,
                "the server could not decode the request",
            ),
            Refusal::RevisionMismatch => {
                (ErrorCode::Provider, "the server speaks another revision")
            }
            Refusal::UnknownRoute => (
                ErrorCode::Unsupported,
                "the server does not serve its backend's primitives (it serves the contract only)",
            ),
            Refusal::UnknownTicket => (ErrorCode::NotFound, "unknown ticket"),
        };
        self.relayed(route, code, what)
    }
}

/// The refusal a reply's header names, if any.
fn refusal_of(headers: &HeaderMap) -> Option<Refusal> {
    headers
        .get(REFUSAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(Refusal::parse)
}
