//! Images for the linux backend: a content-addressed store of unpacked
//! layers imported from OCI image layouts and `docker save` archives, plus
//! the built-in `host` image.
//!
//! - An image's digest is the sha256 of its **config** (docker's image id),
//!   which lists the uncompressed digest (`diff_id`) of each layer; every
//!   blob is checked against the digest that names it, and every layer
//!   against its `diff_id`, so a corrupted archive is refused.
//! - Layers are unpacked once per `diff_id` into `layers/<hex>/`, safely
//!   (see [`unpack`]) and with OCI whiteouts turned into overlayfs ones, so
//!   [`ImageRoot::Layers`] can be given to overlayfs as `lowerdir` as is.
//! - Names are unique; an image may have several: see [`ImageStore`] for
//!   re-pointing, [`layout`] for the directory layout and atomicity.
//! - An image a live sandbox runs on is not removed (see [`live_users`]).
//! - A registry pull's blobs wait in `downloads/`, each kept only once its
//!   sha256 and size are what its manifest says (see [`download`]), for the
//!   same import to take them.

pub mod digest;
pub mod download;
pub mod error;
mod host;
mod inspect;
pub mod layout;
mod progress;
pub mod reference;
pub mod source;
mod store;
pub mod tar_head;
pub mod unpack;
mod users;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use download::{BlobDownload, Downloads, MAX_BLOB_BYTES, PulledLayout};
pub use error::{ImageError, ImageErrorCode};
pub use host::HOST_DIRS;
pub use inspect::{ImageDetails, RunConfig};
pub use progress::{ImportProgress, Unwatched};
pub use reference::HOST_NAME;
pub use store::{ImageStore, UNNAMED};
pub use users::{live_users, store_dir};

/// A stored (or the built-in) image as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// The name (`<none>` once another import took it).
    pub name: String,
    /// `sha256:<hex>` of the image config.
    pub digest: String,
    /// The total size of its layers as imported (compressed), in bytes.
    pub size_bytes: u64,
    /// How many layers it has.
    pub layers: usize,
    /// When it was imported, ms since the epoch (0 for `host`).
    pub created_at_ms: u64,
}

/// A resolved image, ready to become a sandbox's root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The name it was resolved by (or its stored name).
    pub name: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// What to mount.
    pub root: ImageRoot,
}

/// The file systems an image consists of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageRoot {
    /// Unpacked layer directories, topmost first (overlayfs `lowerdir` order).
    /// Whiteouts are overlayfs ones: `0:0` character devices and
    /// `trusted.overlay.opaque=y` directories.
    Layers(Vec<PathBuf>),
    /// Host directories to bind-mount read-only.
    Host(Vec<HostDir>),
}

/// One host directory of the `host` image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDir {
    /// The absolute host path, e.g. `/usr`.
    pub path: String,
    /// The link target when the path is a symlink (e.g. `usr/bin` for
    /// `/bin`): recreate the link in the sandbox instead of mounting.
    pub symlink: Option<String>,
}

/// The built-in `host` image: the host's `/usr`, `/bin`, `/sbin`, `/lib`,
/// `/lib64` (those that exist; symlinks recorded as such) and `/etc`, to be
/// mounted read-only. Its digest is the sha256 of a canonical JSON manifest
/// of those paths, their symlink targets and `/etc/os-release`: stable
/// across runs on one host.
pub fn host_image() -> Image {
    host::host_image_at(Path::new("/"))
}
