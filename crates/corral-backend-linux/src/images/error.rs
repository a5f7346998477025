//! How the image store fails: a closed set of errors, each one line, each
//! with a [`ImageErrorCode`].

use std::fmt;
use std::io;

use corral_backend::{BackendError, CreateError, PlatformError, RequestError};

/// The closed set of error codes of the image store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageErrorCode {
    /// The image (or a layer it needs) does not exist.
    NotFound,
    /// A malformed reference or name, or an archive that is malformed,
    /// hostile or does not match its digests.
    InvalidInput,
    /// A host I/O operation failed.
    Io,
    /// The request conflicts with the store (the built-in image, an image
    /// live sandboxes run on).
    Conflict,
}

impl ImageErrorCode {
    /// The code's snake_case name: `not_found`, `invalid_input`, `io`, `conflict`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageErrorCode::NotFound => "not_found",
            ImageErrorCode::InvalidInput => "invalid_input",
            ImageErrorCode::Io => "io",
            ImageErrorCode::Conflict => "conflict",
        }
    }
}

impl fmt::Display for ImageErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of the image store. `Display` is always one line.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// No image answers to the reference.
    #[error("no image {reference:?}")]
    NotFound {
        /// The reference as given.
        reference: String,
    },
    /// The reference or name is malformed or reserved.
    #[error("invalid image reference {reference:?}: {reason}")]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The archive is not a usable OCI layout or `docker save` archive.
    #[error("invalid image archive: {reason}")]
    InvalidArchive {
        /// What is wrong with it, one line.
        reason: String,
    },
    /// Content does not match the digest that names it.
    #[error("digest mismatch for {what}: expected {expected}, got {actual}")]
    DigestMismatch {
        /// Which blob or layer.
        what: String,
        /// The digest the archive declares.
        expected: String,
        /// The digest of the content.
        actual: String,
    },
    /// A registry's blob declares more bytes than a pull accepts.
    #[error("blob {digest} declares {declared} bytes, more than the limit of {limit}")]
    BlobTooLarge {
        /// The blob's digest.
        digest: String,
        /// The size its manifest declares.
        declared: u64,
        /// The largest blob accepted.
        limit: u64,
    },
    /// A registry sent more bytes of a blob than its manifest declares.
    #[error("blob {digest} is larger than the {declared} bytes its manifest declares")]
    BlobOversize {
        /// The blob's digest.
        digest: String,
        /// The size its manifest declares.
        declared: u64,
    },
    /// A registry's blob ended before the size its manifest declares.
    #[error("blob {digest} ended after {received} bytes of the {declared} its manifest declares")]
    BlobTruncated {
        /// The blob's digest.
        digest: String,
        /// The size its manifest declares.
        declared: u64,
        /// How many bytes came.
        received: u64,
    },
    /// A layer entry that would write outside the layer, refused.
    #[error("refused layer entry {path:?}: {reason}")]
    UnsafeEntry {
        /// The entry path as written in the layer.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The built-in `host` image cannot be changed or removed.
    #[error("the built-in image {reference:?} cannot be removed or replaced")]
    Builtin {
        /// The reference as given.
        reference: String,
    },
    /// Live sandboxes run on the image: its layers are their `/`.
    #[error("image {reference:?} is in use by sandbox(es) {}; destroy them first", sandboxes.join(", "))]
    InUse {
        /// The reference as given.
        reference: String,
        /// The ids of the live sandboxes running it.
        sandboxes: Vec<String>,
    },
    /// A record of the store is unreadable; the store was changed by hand.
    #[error("corrupt image store record {path:?}: {reason}")]
    CorruptRecord {
        /// The record file.
        path: String,
        /// What is wrong, one line.
        reason: String,
    },
    /// A host I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl ImageError {
    /// The closed code of this error.
    pub fn code(&self) -> ImageErrorCode {
        match self {
            ImageError::NotFound { .. } => ImageErrorCode::NotFound,
            ImageError::InvalidReference { .. }
            | ImageError::InvalidArchive { .. }
            | ImageError::DigestMismatch { .. }
            | ImageError::BlobTooLarge { .. }
            | ImageError::BlobOversize { .. }
            | ImageError::BlobTruncated { .. }
            | ImageError::UnsafeEntry { .. } => ImageErrorCode::InvalidInput,
            ImageError::Builtin { .. } | ImageError::InUse { .. } => ImageErrorCode::Conflict,
            ImageError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                ImageErrorCode::NotFound
            }
            ImageError::CorruptRecord { .. } | ImageError::Io { .. } => ImageErrorCode::Io,
        }
    }

    /// An I/O error about `context` (which names the path).
    pub fn io(context: impl fmt::Display, source: impl Into<io::Error>) -> Self {
        ImageError::Io {
            context: one_line(&context.to_string()),
            source: source.into(),
        }
    }

    /// An archive-format error.
    pub fn archive(reason: impl fmt::Display) -> Self {
        ImageError::InvalidArchive {
            reason: one_line(&reason.to_string()),
        }
    }

    /// This error, an archive-format one saying which archive (`what`, a
    /// file or a layer) it is about; any other unchanged.
    pub fn within(self, what: impl fmt::Display) -> Self {
        match self {
            ImageError::InvalidArchive { reason } => {
                ImageError::archive(format!("{what}: {reason}"))
            }
            other => other,
        }
    }
}

/// The one mapping of the store's errors onto the backend's. A host path
/// the store's own messages name stays on the host.
impl From<ImageError> for BackendError {
    fn from(e: ImageError) -> Self {
        match e {
            ImageError::NotFound { reference } => CreateError::ImageNotFound {
                image: reference,
                hint: "pull it with `corral image pull` or import it with `corral image import`"
                    .into(),
            }
            .into(),
            ImageError::InvalidReference { reference, reason } => RequestError::ImageReference {
                reference,
                why: reason.into(),
            }
            .into(),
            e @ (ImageError::InvalidArchive { .. }
            | ImageError::DigestMismatch { .. }
            | ImageError::BlobTooLarge { .. }
            | ImageError::BlobOversize { .. }
            | ImageError::BlobTruncated { .. }
            | ImageError::UnsafeEntry { .. }) => RequestError::ImageArchive {
                why: match e {
                    ImageError::InvalidArchive { reason } => reason,
                    other => other.to_string(),
                },
            }
            .into(),
            e @ (ImageError::Builtin { .. } | ImageError::InUse { .. }) => {
                PlatformError::Conflict {
                    what: "image store".into(),
                    detail: e.to_string(),
                }
                .into()
            }
            ImageError::CorruptRecord { reason, .. } => PlatformError::Io {
                what: "image store: a corrupt record".into(),
                kind: io::ErrorKind::InvalidData,
                detail: reason,
            }
            .into(),
            ImageError::Io { source, .. } => PlatformError::io("image store", &source).into(),
        }
    }
}

/// Folds newlines so that messages stay one line.
pub(crate) fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}
