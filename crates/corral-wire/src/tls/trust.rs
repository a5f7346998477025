//! [`Trust`]: the certificates a client accepts a server's chain from:
//! the system's roots, and the CA bundle a deployment names in
//! `CORRAL_CA_FILE` (how a self-signed or private CA's server is
//! trusted). Verification is never skipped: a server whose chain does not
//! end at one of them is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use super::pem::{self, PemKind, PemProblem};

/// The environment variable naming a PEM bundle of extra CAs to trust.
pub const CA_FILE_ENV: &str = "CORRAL_CA_FILE";

/// What a TLS client trusts.
#[derive(Clone)]
pub struct Trust {
    connector: TlsConnector,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust").finish_non_exhaustive()
    }
}

/// Why the trusted certificates could not be gathered.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The CA file gave nothing usable.
    #[error("{CA_FILE_ENV}: {0}")]
    CaFile(#[from] PemProblem),
    /// A certificate of the CA file is not a usable trust anchor.
    #[error("{CA_FILE_ENV}: CA file {path}: a certificate is not a usable CA: {error}")]
    Anchor {
        /// The CA file.
        path: PathBuf,
        /// rustls' reason.
        error: rustls::Error,
    },
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    Config(rustls::Error),
}

impl Trust {
    /// The system's roots, and the CAs in `ca_file` (PEM) when given.
    pub fn system_and(ca_file: Option<&Path>) -> Result<Self, TrustError> {
        let mut roots = RootCertStore::empty();
        // Unreadable system certificates are skipped: a missing root shows
        // as the refusal of a server it would have vouched for.
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        if let Some(path) = ca_file {
            add_ca_file(&mut roots, path)?;
        }
        Self::of(roots)
    }

    /// Only the CAs in `ca_file` (PEM), not the system's roots: a test, or
    /// a deployment that trusts its private CA alone.
    pub fn only(ca_file: &Path) -> Result<Self, TrustError> {
        let mut roots = RootCertStore::empty();
        add_ca_file(&mut roots, ca_file)?;
        Self::of(roots)
    }

    /// The system's roots, and the CAs in the file `CORRAL_CA_FILE` names
    /// when it is set (and not empty).
    pub fn from_env() -> Result<Self, TrustError> {
        let ca_file = std::env::var_os(CA_FILE_ENV).filter(|v| !v.is_empty());
        Self::system_and(ca_file.as_deref().map(Path::new))
    }

    fn of(roots: RootCertStore) -> Result<Self, TrustError> {
        let mut config = ClientConfig::builder_with_provider(super::provider())
            .with_safe_default_protocol_versions()
            .map_err(TrustError::Config)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// What opens one connection's handshake.
    pub(crate) fn connector(&self) -> &TlsConnector {
        &self.connector
    }
}

/// Adds every certificate of the CA file at `path` to `roots`.
fn add_ca_file(roots: &mut RootCertStore, path: &Path) -> Result<(), TrustError> {
    for cert in pem::certificates(PemKind::CaBundle, path)? {
        roots.add(cert).map_err(|error| TrustError::Anchor {
            path: path.to_path_buf(),
            error,
        })?;
    }
    Ok(())
}
