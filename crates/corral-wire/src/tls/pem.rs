//! Reading PEM files: certificates and a private key, each file bounded in
//! size and every failure naming the file and what is wrong with it in
//! words (never the bytes of a bad line).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest PEM file read: a large CA bundle is a few hundred KiB.
const MAX_PEM_BYTES: u64 = 16 * 1024 * 1024;

/// What a PEM file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PemKind {
    /// A server's certificate chain (`--tls-cert`).
    Certificate,
    /// A server's private key (`--tls-key`).
    Key,
    /// Certificates a client trusts (`CORRAL_CA_FILE`).
    CaBundle,
}

/// A PEM file, named by what it holds and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemFile {
    /// What it holds.
    pub kind: PemKind,
    /// Where it is.
    pub path: PathBuf,
}

impl fmt::Display for PemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            PemKind::Certificate => "certificate file",
            PemKind::Key => "key file",
            PemKind::CaBundle => "CA file",
        };
        write!(f, "{what} {}", self.path.display())
    }
}

/// Why a PEM file gave nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum PemProblem {
    /// It could not be read.
    #[error("{file}: cannot be read: {source}")]
    Unreadable {
        /// The file.
        file: PemFile,
        /// The error reading it.
        source: std::io::Error,
    },
    /// It is larger than any PEM file corral reads.
    #[error("{file}: larger than {MAX_PEM_BYTES} bytes; not a PEM file")]
    TooLarge {
        /// The file.
        file: PemFile,
    },
    /// A section of it is not well-formed PEM.
    #[error("{file}: not valid PEM: {why}")]
    Malformed {
        /// The file.
        file: PemFile,
        /// What is wrong, in words.
        why: &'static str,
    },
    /// It holds no section of the kind it should.
    #[error("{file}: no {wanted} in it")]
    Missing {
        /// The file.
        file: PemFile,
        /// The section wanted (`-----BEGIN CERTIFICATE-----`, …).
        wanted: &'static str,
    },
}

/// The words for a PEM parse error.
fn why(error: &pem::Error) -> &'static str {
    match error {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a section's base64 does not decode",
        pem::Error::SectionTooLarge => "a section is larger than 256 MB",
        _ => "it cannot be parsed",
    }
}

/// The whole of `file`, at most [`MAX_PEM_BYTES`].
fn read(file: &PemFile) -> Result<Vec<u8>, PemProblem> {
    let unreadable = |source| PemProblem::Unreadable {
        file: file.clone(),
        source,
    };
    let opened = std::fs::File::open(&file.path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    opened
        .take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(PemProblem::TooLarge { file: file.clone() });
    }
    Ok(bytes)
}

/// Every `CERTIFICATE` section of the file at `path` (at least one), in
/// order.
pub(crate) fn certificates(
    kind: PemKind,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, PemProblem> {
    let file = PemFile {
        kind,
        path: path.to_path_buf(),
    };
    let bytes = read(&file)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PemProblem::Malformed {
            file: file.clone(),
            why: why(&e),
        })?;
    if certs.is_empty() {
        return Err(PemProblem::Missing {
            file,
            wanted: "-----BEGIN CERTIFICATE----- section",
        });
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) of the file at `path`.
pub(crate) fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, PemProblem> {
    let file = PemFile {
        kind: PemKind::Key,
        path: path.to_path_buf(),
    };
    let bytes = read(&file)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        pem::Error::NoItemsFound => PemProblem::Missing {
            file,
            wanted: "-----BEGIN PRIVATE KEY----- (or RSA/EC PRIVATE KEY) section",
        },
        other => PemProblem::Malformed {
            file,
            why: why(&other),
        },
    })
}
