//! [`Scratch`]: a backend holding nothing of the user's, and the
//! temporary state directory it must not outlive
//! ([`BackendKind::open_scratch`](crate::BackendKind::open_scratch)).

use corral_backend::Verified;
use corral_backend_docker::DockerBackend;
use corral_backend_linux::LinuxBackend;
use corral_backend_linux::layers::Layer;
use corral_backend_local::LocalBackend;

use crate::kind::BackendKind;
use crate::open::{OpenError, verified};
use crate::opened::OpenedBackend;

/// A backend opened for a measurement or a test, with its temporary state
/// directory (none for the backends that keep no state on this host).
#[derive(Debug)]
pub struct Scratch {
    /// The backend.
    pub backend: OpenedBackend,
    /// Its state directory, removed when dropped or closed. Close the
    /// backend first (`Backend::close`): a linux backend's destroys answer
    /// before their reapers have detached what is mounted under it, and
    /// its close waits for them.
    pub state_dir: Option<tempfile::TempDir>,
}

impl Scratch {
    /// A new, empty temporary directory for a backend's state (never the
    /// user's own).
    pub(crate) fn state_dir() -> Result<tempfile::TempDir, OpenError> {
        tempfile::Builder::new()
            .prefix("corral-scratch-")
            .tempdir()
            .map_err(|source| OpenError::StateDir {
                message: source.to_string(),
            })
    }

    /// `backend`, keeping its state in `dir`.
    pub(crate) fn in_dir(backend: OpenedBackend, dir: tempfile::TempDir) -> Self {
        Scratch {
            backend,
            state_dir: Some(dir),
        }
    }

    /// `backend`, which keeps no state directory on this host.
    pub(crate) fn without_dir(backend: OpenedBackend) -> Self {
        Scratch {
            backend,
            state_dir: None,
        }
    }
}

impl Scratch {
    /// The linux backend, verified, on a new temporary state directory
    /// (the [`BackendKind::open_scratch`] row of linux, as its own type for
    /// callers that need it: the conformance suite's target); refused with
    /// the host's reason where linux cannot run here.
    pub fn linux() -> Result<(Verified<LinuxBackend>, tempfile::TempDir), OpenError> {
        linux_available()?;
        let dir = Scratch::state_dir()?;
        Ok((LinuxBackend::open_verified(dir.path())?, dir))
    }

    /// The local backend, verified, on a new temporary state directory
    /// (the [`BackendKind::open_scratch`] row of local, as its own type).
    pub fn local() -> Result<(Verified<LocalBackend>, tempfile::TempDir), OpenError> {
        let dir = Scratch::state_dir()?;
        Ok((LocalBackend::open_verified(dir.path())?, dir))
    }

    /// A linux backend on a new temporary state directory **without** the
    /// isolation layer `without`: the bench's `linux without <layer>` rows,
    /// which show what each layer costs. Never for running untrusted code;
    /// the registry's other openers always have every layer.
    pub fn linux_without(without: Layer) -> Result<Scratch, OpenError> {
        linux_available()?;
        let dir = Scratch::state_dir()?;
        let backend = LinuxBackend::open_measuring(dir.path(), &[without])?;
        Ok(Scratch::in_dir(
            OpenedBackend::Linux(verified(backend)?),
            dir,
        ))
    }

    /// The docker backend of the scratch row (the engine of `DOCKER_HOST`,
    /// corral's busybox image imported when missing, never pulled),
    /// verified and scoped to the label `scope`: it sees and reclaims only
    /// what it made itself on a shared engine (the conformance suite's
    /// docker target).
    pub async fn docker_scoped(scope: &str) -> Result<Verified<DockerBackend>, OpenError> {
        let backend = corral_backend_docker::busybox_image::connect()
            .await?
            .scoped(scope)?;
        Ok(verified(backend)?)
    }

    /// A docker backend whose sandboxes start from `image`, which the
    /// engine must already hold (no registry is contacted): the bench's
    /// docker rows on an image of the caller's, beside the scratch
    /// opener's test image.
    pub async fn docker_on(image: &str) -> Result<Scratch, OpenError> {
        let backend = DockerBackend::connect_with_image(image).await?;
        Ok(Scratch::without_dir(OpenedBackend::Docker(verified(
            backend,
        )?)))
    }
}

/// Whether this host can run the linux backend, as the registry refuses it.
fn linux_available() -> Result<(), OpenError> {
    BackendKind::Linux
        .available()
        .map_err(|why| OpenError::Unavailable {
            backend: BackendKind::Linux,
            why,
        })
}
