//! [`PullError`]: why `corral image pull` failed, one line each, naming the
//! registry, the reference or the file.

use corral_backend::ErrorCode;
use corral_backend_linux::images::{ImageError, ImageErrorCode};

/// A failed pull. `Display` is always one line.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The reference is not `[http[s]://]REGISTRY/REPOSITORY[:TAG][@DIGEST]`.
    #[error("invalid image reference {reference:?}: {reason}")]
    Reference {
        /// The reference as given.
        reference: String,
        /// Why it is refused.
        reason: String,
    },
    /// `http://` to a registry that is not on loopback, without `--insecure`.
    #[error(
        "refusing plain http:// to registry {registry}: only a loopback registry (127.0.0.1, localhost, [::1]) is reached without TLS unless --insecure is given"
    )]
    PlainHttp {
        /// The registry.
        registry: String,
    },
    /// The registry wants credentials and there are none for it.
    #[error(
        "registry {registry} needs credentials: none for it in {config} (add an auths entry, e.g. with docker login {registry})"
    )]
    NeedsCredentials {
        /// The registry.
        registry: String,
        /// The credentials file looked in.
        config: String,
    },
    /// The registry refused the credentials found for it.
    #[error("registry {registry} refused the credentials for it in {config}")]
    CredentialsRefused {
        /// The registry.
        registry: String,
        /// The credentials file they came from.
        config: String,
    },
    /// The credentials file is unreadable or malformed.
    #[error("credentials file {path}: {reason}")]
    CredentialsFile {
        /// The file.
        path: String,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The registry has no such tag, digest or repository.
    #[error("registry {registry} has no {wanted} in repository {repository}")]
    NotFound {
        /// The registry.
        registry: String,
        /// The repository.
        repository: String,
        /// What was asked for.
        wanted: Wanted,
    },
    /// An index (manifest list) without an entry for this host.
    #[error("{reference} has no {wanted} image: its index lists {}", listed(.platforms))]
    NoPlatform {
        /// The reference as given.
        reference: String,
        /// `os/arch` of this host.
        wanted: String,
        /// What the index lists.
        platforms: Vec<String>,
    },
    /// A manifest or index that is malformed, oversized or hostile.
    #[error("the manifest of {reference}: {reason}")]
    Manifest {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The registry could not be reached or answered with an error.
    #[error("registry {registry}: {detail}")]
    Registry {
        /// The registry.
        registry: String,
        /// What happened, one line.
        detail: String,
    },
    /// The store refused what was received, or failed.
    #[error(transparent)]
    Store(#[from] ImageError),
}

/// What a reference asks a repository for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// A tag (`latest` when the reference names none).
    Tag(String),
    /// A manifest digest.
    Digest(String),
}

impl std::fmt::Display for Wanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wanted::Tag(t) => write!(f, "tag {t:?}"),
            Wanted::Digest(d) => write!(f, "digest {d}"),
        }
    }
}

fn listed(platforms: &[String]) -> String {
    if platforms.is_empty() {
        "no platform".to_string()
    } else {
        platforms.join(", ")
    }
}

impl PullError {
    /// The closed code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            PullError::Reference { .. }
            | PullError::PlainHttp { .. }
            | PullError::CredentialsFile { .. }
            | PullError::Manifest { .. } => ErrorCode::InvalidInput,
            PullError::NeedsCredentials { .. } | PullError::CredentialsRefused { .. } => {
                ErrorCode::Auth
            }
            PullError::NotFound { .. } => ErrorCode::NotFound,
            PullError::NoPlatform { .. } => ErrorCode::Unsupported,
            PullError::Registry { .. } => ErrorCode::Unavailable,
            PullError::Store(e) => match e.code() {
                ImageErrorCode::InvalidInput => ErrorCode::InvalidInput,
                ImageErrorCode::NotFound => ErrorCode::NotFound,
                ImageErrorCode::Io => ErrorCode::Io,
                ImageErrorCode::Conflict => ErrorCode::Conflict,
            },
        }
    }
}

/// An error and its sources, one line (`a: b: c`), without repeats.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out.replace(['\r', '\n'], " ")
}
