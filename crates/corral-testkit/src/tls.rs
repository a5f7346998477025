//! A test PKI on disk: a CA, a server certificate it signed for
//! `localhost`, `127.0.0.1` and `::1`, the server's key, an unrelated key
//! (a key that does not match the certificate), and a self-signed
//! certificate for the same names with its key, each a PEM file in a
//! directory the caller owns.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// The files of a test PKI.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// The CA's certificate (what a client trusts: `CORRAL_CA_FILE`).
    pub ca: PathBuf,
    /// The server's certificate (`--tls-cert`).
    pub cert: PathBuf,
    /// The server's key (`--tls-key`).
    pub key: PathBuf,
    /// A key that is not the certificate's.
    pub other_key: PathBuf,
    /// A self-signed certificate for the same names (its own CA file).
    pub self_signed: PathBuf,
    /// The self-signed certificate's key.
    pub self_signed_key: PathBuf,
}

/// Why a test PKI could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// rcgen refused.
    #[error("generating the test PKI: {0}")]
    Generate(#[from] rcgen::Error),
    /// A file could not be written.
    #[error("writing the test PKI: {0}")]
    Write(#[from] std::io::Error),
}

impl TestPki {
    /// Generates a fresh PKI and writes it under `dir` (`ca.pem`,
    /// `cert.pem`, `key.pem`, `other-key.pem`, `self-signed.pem`,
    /// `self-signed-key.pem`).
    pub fn create(dir: &Path) -> Result<Self, PkiError> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "corral test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(names.clone())?.signed_by(&key, &ca)?;
        let alone = rcgen::generate_simple_self_signed(names)?;
        let pki = TestPki {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            other_key: dir.join("other-key.pem"),
            self_signed: dir.join("self-signed.pem"),
            self_signed_key: dir.join("self-signed-key.pem"),
        };
        std::fs::write(&pki.ca, ca.as_ref().pem())?;
        std::fs::write(&pki.cert, cert.pem())?;
        std::fs::write(&pki.key, key.serialize_pem())?;
        std::fs::write(&pki.other_key, KeyPair::generate()?.serialize_pem())?;
        std::fs::write(&pki.self_signed, alone.cert.pem())?;
        std::fs::write(&pki.self_signed_key, alone.signing_key.serialize_pem())?;
        Ok(pki)
    }
}
