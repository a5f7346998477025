//! [`ServerTls`]: what a server presents: a certificate chain and the key
//! that matches it, loaded once from PEM files. Every way the pair can be
//! unusable is found here, when it is loaded: an unreadable or malformed
//! file, a file without the section it should hold, a key rustls cannot
//! use, a key that is not the certificate's.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use super::pem::{self, PemKind, PemProblem};

/// The protocol a TLS client is told the server speaks (ALPN): HTTP/1.1
/// only, which is all a corral-wire server serves.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// A certificate chain and its key, ready to accept TLS connections.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls").finish_non_exhaustive()
    }
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServerTlsError {
    /// One of the files gave nothing usable.
    #[error(transparent)]
    File(#[from] PemProblem),
    /// The key is not the one the certificate names.
    #[error(
        "key file {key} does not match certificate file {cert} (its public key is not the certificate's)"
    )]
    Mismatch {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
    },
    /// rustls refused the pair for another reason (a certificate or key it
    /// cannot parse or use).
    #[error("certificate file {cert} with key file {key}: {error}")]
    Refused {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
        /// rustls' reason.
        error: rustls::Error,
    },
}

impl ServerTls {
    /// The chain in `cert` (PEM, the server's certificate first) and the
    /// key in `key` (PEM: PKCS#8, PKCS#1 or SEC1), checked against each
    /// other.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, ServerTlsError> {
        let chain = pem::certificates(PemKind::Certificate, cert)?;
        let private = pem::private_key(key)?;
        let names = || (cert.display().to_string(), key.display().to_string());
        let mut config = ServerConfig::builder_with_provider(super::provider())
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(chain, private))
            .map_err(|error| {
                let (cert, key) = names();
                match error {
                    rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                        ServerTlsError::Mismatch { cert, key }
                    }
                    error => ServerTlsError::Refused { cert, key, error },
                }
            })?;
        config.alpn_protocols = vec![ALPN_HTTP1.to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// What accepts one connection's handshake.
    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}
