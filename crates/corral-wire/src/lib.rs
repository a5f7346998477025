//! corral-wire: the provider contract over the network.
//!
//! - [`protocol`]: the wire form — one `POST /v1/<member>` route per unary
//!   member with the `corral-contract` serde forms as bodies, contract
//!   errors as the error body, and one WebSocket per `openProcess` with
//!   `data`, `credit`, `ack`, `replay`/`resumed`, `half_close`, `signal`,
//!   `exit` and `error` frames. Versioned by [`protocol::CONTRACT_REVISION`].
//! - [`server`]: hosts any [`corral_contract::SandboxProvider`] behind those
//!   routes, with bearer-token authentication ([`auth`]) and per-route body
//!   bounds, and a graceful shutdown.
//! - [`client`]: [`WireProvider`], a `SandboxProvider` whose members are
//!   requests to a server. Hold it behind the corral runtime exactly like
//!   an in-process provider: the runtime validates every result.
//!
//! - [`remote`]: [`RemoteBackend`], the backend primitives of another
//!   corral host (served next to the contract by
//!   [`WireServer::serving_backend`]), for the SDK on another machine.
//!
//! - [`tls`]: TLS for both sides — [`ServerTls`], the certificate and key
//!   a server presents, and [`Trust`], what a client verifies an
//!   `https://` server against.
//!
//! - [`kit`]: the author kit — JSON Schemas and golden vectors generated
//!   from the types, checked in under `kit/`.
//!
//! The prose of the protocol, with the guarantees a network hop costs, is
//! `docs/wire.md`.

pub mod auth;
pub mod client;
pub mod kit;
pub mod protocol;
pub mod remote;
pub mod server;
pub mod tls;

pub use auth::{Token, TokenError};
pub use client::{Endpoint, EndpointError, WireError, WireProvider};
pub use remote::RemoteBackend;
pub use server::{ConnectionLimits, RunningServer, ShutdownReport, WireServer};
pub use tls::{CA_FILE_ENV, HandshakeError, ServerTls, ServerTlsError, Trust, TrustError};
