//! One HTTP/1.1 exchange per call, on a kept-alive connection
//! ([`super::pool`]): `POST /v1/<member>` with the bearer token and the
//! revision, a bounded response, the contract error on failure; sent
//! again only as [`super::retry`] allows.

use bytes::Bytes;
use corral_contract::{FailureReason, Operation, SandboxError};
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::http::response::Parts;
use hyper::{Method, Request, Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use super::Endpoint;
use super::pool::{Conn, Pool, ReplyBody};
use super::retry::{Failure, retry};
use crate::auth::Token;
use crate::protocol::{CONTRACT_REVISION, REVISION_HEADER, Route};
use crate::tls::HandshakeError;
use crate::tls::Trust;
use crate::tls::stream::{ConnectError, Dial};

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
pub(crate) async fn read_bounded(body: ReplyBody) -> Result<Bytes, ReadFailure> {
    match Limited::new(body, MAX_RESPONSE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ReadFailure::TooLarge),
        Err(_) => Err(ReadFailure::Broken),
    }
}

/// The server, as the client reaches it: its address, the token, how a
/// connection is opened (TLS and what it trusts, for `https://`), and the
/// connections kept open to it ([`Pool`]).
#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) endpoint: Endpoint,
    pub(crate) token: Token,
    pub(crate) dial: Dial,
    pool: Arc<Pool>,
}

/// Why an exchange got no whole answer.
#[derive(Debug)]
pub(crate) enum ExchangeFailure {
    /// No response, or not all of it ([`SendFailure`]).
    Send(SendFailure),
    /// The response's body is longer than [`MAX_RESPONSE_BYTES`].
    TooLarge,
}

/// Why one attempt failed.
enum Attempted {
    Failed(Failure),
    Request(String),
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
    /// The server at `endpoint`, reached with `token`, its certificate
    /// verified against `trust` when the endpoint is `https://` (and
    /// `trust` is `None` only when it is not); no connection yet.
    pub(crate) fn new(endpoint: Endpoint, token: Token, trust: Option<Trust>) -> Self {
        let tls = endpoint.server_name().cloned().zip(trust);
        let dial = Dial {
            authority: endpoint.authority().to_string(),
            tls,
        };
        Self {
            endpoint,
            token,
            dial,
            pool: Arc::default(),
        }
    }

    /// Opens one connection now, for `https://`, and closes it: a TLS
    /// failure (an untrusted certificate, say) is reported by name here,
    /// where a call would only see the server unavailable. A TCP failure
    /// is left for the first call to report. (The connection is not kept:
    /// the server's session tickets, unread until a response is read,
    /// would make the pool take it for one the server closed.)
    pub(crate) async fn check_tls(&self) -> Result<(), HandshakeError> {
        if self.dial.tls.is_none() {
            return Ok(());
        }
        match self.dial.open().await {
            Ok(_) | Err(ConnectError::Tcp(_)) => Ok(()),
            Err(ConnectError::Tls(error)) => Err(error),
        }
    }

    /// Sends `body` to `route` and decodes the result.
    pub(crate) async fn post<Req: Serialize, Res: DeserializeOwned>(
        &self,
        route: Route,
        body: &Req,
    ) -> Result<Res, SandboxError> {
        let operation = route.operation();
        let body = serde_json::to_vec(body).map_err(|e| invalid(operation, "a JSON request", e))?;
        let (parts, bytes) = self
            .exchange(route.path(), body, route.idempotent())
            .await
            .map_err(|failure| match failure {
                ExchangeFailure::Send(SendFailure::Unavailable) => unavailable(operation),
                ExchangeFailure::Send(SendFailure::Request(e)) => {
                    invalid(operation, "a well-formed request", e)
                }
                ExchangeFailure::TooLarge => invalid(
                    operation,
                    "a response within the contract's bounds",
                    "a larger one",
                ),
            })?;
        let revision = parts
            .headers
            .get(REVISION_HEADER)
            .and_then(|v| v.to_str().ok());
        if revision != Some(CONTRACT_REVISION) {
            return Err(SandboxError::SandboxProtocolInvalid {
                operation,
                field: REVISION_HEADER.into(),
                expected: CONTRACT_REVISION.into(),
                actual: revision.unwrap_or("none").into(),
            });
        }
        if parts.status == StatusCode::OK {
            return serde_json::from_slice(&bytes)
                .map_err(|e| invalid(operation, std::any::type_name::<Res>(), e));
        }
        match serde_json::from_slice::<SandboxError>(&bytes) {
            Ok(error) => Err(error),
            Err(e) => Err(invalid(
                operation,
                "a contract error",
                format_args!("HTTP {}: {e}", parts.status),
            )),
        }
    }

    /// Sends `POST path` with `body` and reads the whole response, within
    /// [`MAX_RESPONSE_BYTES`]; a connection that breaks during the body
    /// counts as one that broke before it ([`Failure::MaybeSent`]), so an
    /// `idempotent` call is sent again then.
    pub(crate) async fn exchange(
        &self,
        path: &str,
        body: Vec<u8>,
        idempotent: bool,
    ) -> Result<(Parts, Bytes), ExchangeFailure> {
        let body = Bytes::from(body);
        let mut attempt = 0;
        loop {
            let (response, sent_on) = self
                .send_from(attempt, path, &body, idempotent)
                .await
                .map_err(ExchangeFailure::Send)?;
            let (parts, reply) = response.into_parts();
            match read_bounded(reply).await {
                Ok(bytes) => return Ok((parts, bytes)),
                Err(ReadFailure::TooLarge) => return Err(ExchangeFailure::TooLarge),
                Err(ReadFailure::Broken) if retry(sent_on, Failure::MaybeSent, idempotent) => {
                    attempt = sent_on + 1;
                }
                Err(ReadFailure::Broken) => {
                    return Err(ExchangeFailure::Send(SendFailure::Unavailable));
                }
            }
        }
    }

    /// Sends `POST path` with `body`: the response, whose body streams and
    /// gives the connection back to the pool once read to its end.
    pub(crate) async fn send(
        &self,
        path: &str,
        body: Vec<u8>,
        idempotent: bool,
    ) -> Result<Response<ReplyBody>, SendFailure> {
        let body = Bytes::from(body);
        let (response, _) = self.send_from(0, path, &body, idempotent).await?;
        Ok(response)
    }

    /// Sends from attempt number `attempt` on until one gets a response
    /// or [`retry`] says to stop: the response and the attempt that got
    /// it.
    async fn send_from(
        &self,
        mut attempt: u32,
        path: &str,
        body: &Bytes,
        idempotent: bool,
    ) -> Result<(Response<ReplyBody>, u32), SendFailure> {
        loop {
            match self.attempt(path, body, attempt > 0).await {
                Ok(response) => return Ok((response, attempt)),
                Err(Attempted::Request(e)) => return Err(SendFailure::Request(e)),
                Err(Attempted::Failed(failure)) if retry(attempt, failure, idempotent) => {
                    attempt += 1;
                }
                Err(Attempted::Failed(_)) => return Err(SendFailure::Unavailable),
            }
        }
    }

    /// One attempt: on an idle connection of the pool, unless `fresh` or
    /// there is none, else on a new one.
    async fn attempt(
        &self,
        path: &str,
        body: &Bytes,
        fresh: bool,
    ) -> Result<Response<ReplyBody>, Attempted> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(HOST, self.endpoint.authority())
            .header(AUTHORIZATION, self.token.header_value())
            .header(REVISION_HEADER, CONTRACT_REVISION)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(body.clone()))
            .map_err(|e| Attempted::Request(e.to_string()))?;
        let idle = if fresh { None } else { self.pool.take().await };
        let mut conn = match idle {
            Some(conn) => conn,
            None => Conn::open(&self.dial)
                .await
                .map_err(|_| Attempted::Failed(Failure::Connect))?,
        };
        match conn.sender.try_send_request(request).await {
            Ok(response) => {
                let pool = Arc::clone(&self.pool);
                Ok(response.map(|inner| ReplyBody::new(inner, conn, pool)))
            }
            // hyper hands a request back only when none of it was written.
            Err(e) if e.message().is_some() => Err(Attempted::Failed(Failure::Unsent)),
            Err(_) => Err(Attempted::Failed(Failure::MaybeSent)),
        }
    }
}
