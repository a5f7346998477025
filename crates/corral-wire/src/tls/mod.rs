//! TLS for corral-wire, with rustls and its `aws-lc-rs` provider only:
//!
//! - [`ServerTls`]: a server's certificate chain and key, read from PEM
//!   files and checked against each other when they are loaded, before
//!   anything listens;
//! - [`Trust`]: what a client trusts: the system's roots, plus an optional
//!   CA bundle ([`CA_FILE_ENV`], `CORRAL_CA_FILE`). There is no way to skip
//!   verification.
//!
//! `docs/wire.md` says what a deployment does with them.

mod pem;
mod server;
pub(crate) mod stream;
mod trust;

pub use pem::{PemFile, PemKind, PemProblem};
pub use server::{ServerTls, ServerTlsError};
pub use stream::HandshakeError;
pub use trust::{CA_FILE_ENV, Trust, TrustError};

use std::sync::Arc;

/// The one crypto provider corral's TLS uses, whatever else the build
/// links: `aws-lc-rs`, rustls' default (with post-quantum key exchange).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}
