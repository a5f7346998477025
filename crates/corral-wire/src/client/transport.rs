//! One HTTP/1.1 request per call: `POST /v1/<member>` with the bearer
//! token and the revision, a bounded response, the contract error on
//! failure.

use bytes::Bytes;
use corral_contract::{FailureReason, Operation, SandboxError};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpStream;

use super::Endpoint;
use crate::auth::Token;
use crate::protocol::{CONTRACT_REVISION, REVISION_HEADER, Route};

/// The largest response body the client reads: a full `readFiles` result
/// (128 MiB of content in base64) and its envelope.
pub(crate) const MAX_RESPONSE_BYTES: usize = 192 * 1024 * 1024;

/// Why a request got no response.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// The server could not be reached, or the connection broke.
    Unavailable,
    /// The request could not be built.
    Request(String),
}

/// Why a response's body could not be read whole.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// It is longer than [`MAX_RESPONSE_BYTES`].
    TooLarge,
    /// The connection broke before its end.
    Broken,
}

/// A response's whole body, at most [`MAX_RESPONSE_BYTES`].
pub(crate) async fn read_bounded(body: Incoming) -> Result<Bytes, ReadFailure> {
    match Limited::new(body, MAX_RESPONSE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ReadFailure::TooLarge),
        Err(_) => Err(ReadFailure::Broken),
    }
}

/// The server, as the client reaches it.
#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) endpoint: Endpoint,
    pub(crate) token: Token,
}

fn unavailable(operation: Operation) -> SandboxError {
    SandboxError::operation_failed(operation, FailureReason::PlatformUnavailable)
}

fn invalid(operation: Operation, expected: &str, actual: impl ToString) -> SandboxError {
    SandboxError::SandboxProtocolInvalid {
        operation,
        field: "response".into(),
        expected: expected.into(),
        actual: actual.to_string(),
    }
}

impl Transport {
    /// Sends `body` to `route` and decodes the result.
    pub(crate) async fn post<Req: Serialize, Res: DeserializeOwned>(
        &self,
        route: Route,
        body: &Req,
    ) -> Result<Res, SandboxError> {
        let operation = route.operation();
        let body = serde_json::to_vec(body).map_err(|e| invalid(operation, "a JSON request", e))?;
        let (status, revision, bytes) = self.round_trip(route, body).await?;
        if revision.as_deref() != Some(CONTRACT_REVISION) {
            return Err(SandboxError::SandboxProtocolInvalid {
                operation,
                field: REVISION_HEADER.into(),
                expected: CONTRACT_REVISION.into(),
                actual: revision.unwrap_or_else(|| "none".into()),
            });
        }
        if status == StatusCode::OK {
            return serde_json::from_slice(&bytes)
                .map_err(|e| invalid(operation, std::any::type_name::<Res>(), e));
        }
        match serde_json::from_slice::<SandboxError>(&bytes) {
            Ok(error) => Err(error),
            Err(e) => Err(invalid(
                operation,
                "a contract error",
                format_args!("HTTP {status}: {e}"),
            )),
        }
    }

    /// Opens a connection and sends `POST path` with `body`: the response,
    /// whose body streams. The connection closes when the response is
    /// read to its end or dropped.
    pub(crate) async fn send(
        &self,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Response<Incoming>, SendFailure> {
        let stream = TcpStream::connect(self.endpoint.authority())
            .await
            .map_err(|_| SendFailure::Unavailable)?;
        // A request's head and body are two writes: with Nagle's algorithm
        // the body waits for the server's delayed ACK (about 40 ms).
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| SendFailure::Unavailable)?;
        tokio::spawn(connection);
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(HOST, self.endpoint.authority())
            .header(AUTHORIZATION, self.token.header_value())
            .header(REVISION_HEADER, CONTRACT_REVISION)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| SendFailure::Request(e.to_string()))?;
        sender
            .send_request(request)
            .await
            .map_err(|_| SendFailure::Unavailable)
    }

    async fn round_trip(
        &self,
        route: Route,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Option<String>, Bytes), SandboxError> {
        let operation = route.operation();
        let response = self
            .send(route.path(), body)
            .await
            .map_err(|failure| match failure {
                SendFailure::Unavailable => unavailable(operation),
                SendFailure::Request(e) => invalid(operation, "a well-formed request", e),
            })?;
        let status = response.status();
        let revision = response
            .headers()
            .get(REVISION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = read_bounded(response.into_body())
            .await
            .map_err(|failure| match failure {
                ReadFailure::TooLarge => invalid(
                    operation,
                    "a response within the contract's bounds",
                    "a larger one",
                ),
                ReadFailure::Broken => unavailable(operation),
            })?;
        Ok((status, revision, bytes))
    }
}
