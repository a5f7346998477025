//! [`BackendKind`]: the in-tree backends, and the one table of what each
//! one is — its name, the prefix of its sandbox ids, whether it can run on
//! this host, its conformance targets, its opener and its bench opener.
//! Each is a `match` without a wildcard, so a new backend is one more
//! variant and the compiler names every row it still lacks.

use std::fmt;

use corral_backend_docker::{DockerBackend, busybox_image};
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;

use crate::open::{OpenError, docker_image, verified};
use crate::opened::OpenedBackend;
use crate::scratch::Scratch;
use crate::target::ConformanceTarget;

/// A backend compiled into corral.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// corral's own isolation: namespaces, overlayfs, cgroups, seccomp
    /// (`corral-backend-linux`).
    Linux,
    /// Host processes in a directory of their own, isolating next to
    /// nothing (`corral-backend-local`).
    Local,
    /// The deterministic oracle: sandboxes in this process's memory
    /// (`corral-backend-memory`).
    Memory,
    /// A container of a Docker Engine (`corral-backend-docker`).
    Docker,
}

impl BackendKind {
    /// Every in-tree backend, in the order messages list them.
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Linux,
        BackendKind::Local,
        BackendKind::Memory,
        BackendKind::Docker,
    ];

    /// The name a user types (`--backend NAME`), and the one the backend
    /// reports as its own.
    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Linux => "linux",
            BackendKind::Local => "local",
            BackendKind::Memory => "memory",
            BackendKind::Docker => "docker",
        }
    }

    /// What every sandbox id this backend issues starts with: the
    /// backend's own constant.
    pub const fn id_prefix(self) -> &'static str {
        match self {
            BackendKind::Linux => corral_backend_linux::SANDBOX_PREFIX,
            BackendKind::Local => corral_backend_local::SANDBOX_PREFIX,
            BackendKind::Memory => corral_backend_memory::SANDBOX_PREFIX,
            BackendKind::Docker => corral_backend_docker::ID_PREFIX,
        }
    }

    /// Whether its sandboxes outlive the process that created them (a
    /// memory sandbox lives only inside the process that made it, so no
    /// other process can find, reclaim or reach it).
    pub const fn outlives_its_process(self) -> bool {
        match self {
            BackendKind::Linux | BackendKind::Local | BackendKind::Docker => true,
            BackendKind::Memory => false,
        }
    }

    /// Whether this host can run the backend, or why not. Only the linux
    /// backend asks anything of the host before it is opened (root or
    /// user namespaces, overlayfs); a Docker Engine is found by
    /// connecting to it.
    pub fn available(self) -> Result<(), String> {
        match self {
            BackendKind::Linux => LinuxBackend::available(),
            BackendKind::Local | BackendKind::Memory | BackendKind::Docker => Ok(()),
        }
    }

    /// The conformance targets this backend opens, in the order help
    /// texts list them.
    pub fn conformance_targets(self) -> impl Iterator<Item = ConformanceTarget> {
        ConformanceTarget::ALL
            .into_iter()
            .filter(move |t| t.backend() == self)
    }

    /// The backend named `name`, if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The backend that issued sandbox `id`, from its prefix.
    pub fn issuer_of(id: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| id.starts_with(k.id_prefix()))
    }

    /// Every name, comma-separated, in [`Self::ALL`]'s order.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// Opens the backend on the user's state directory
    /// (`LocalBackend::default_state_dir()`, which every backend that keeps
    /// state shares). The linux backend refuses with the host's reason
    /// where [`Self::available`] fails; docker connects to the engine of
    /// `DOCKER_HOST` with the image [`docker_image`] names.
    pub async fn open(self) -> Result<OpenedBackend, OpenError> {
        self.available()
            .map_err(|why| OpenError::Unavailable { backend: self, why })?;
        self.open_available().await
    }

    /// [`Self::open`] once [`Self::available`] has said yes.
    pub(crate) async fn open_available(self) -> Result<OpenedBackend, OpenError> {
        let dir = LocalBackend::default_state_dir();
        Ok(match self {
            BackendKind::Linux => OpenedBackend::Linux(LinuxBackend::open_verified(dir)?),
            BackendKind::Local => OpenedBackend::Local(LocalBackend::open_verified(dir)?),
            BackendKind::Memory => OpenedBackend::Memory(verified(MemoryBackend::new())?),
            BackendKind::Docker => OpenedBackend::Docker(verified(
                DockerBackend::connect_with_image(&docker_image()).await?,
            )?),
        })
    }

    /// Opens the backend on the user's state directory as [`Self::open`]
    /// does, for housekeeping that only lists, inspects, reclaims and
    /// destroys (`corral gc`): docker connects without checking that its
    /// image is in the engine, so an engine holding none of corral's
    /// images is swept too.
    pub async fn open_to_sweep(self) -> Result<OpenedBackend, OpenError> {
        self.available()
            .map_err(|why| OpenError::Unavailable { backend: self, why })?;
        match self {
            BackendKind::Docker => Ok(OpenedBackend::Docker(verified(
                DockerBackend::connect_without_image_check(&docker_image()).await?,
            )?)),
            BackendKind::Linux | BackendKind::Local | BackendKind::Memory => {
                self.open_available().await
            }
        }
    }

    /// Opens the backend holding nothing of the user's, for a measurement
    /// or a test: a fresh memory backend; local and linux on a new
    /// temporary state directory (removed when the [`Scratch`] is closed);
    /// docker on the engine of `DOCKER_HOST` with corral's busybox image,
    /// imported when missing (never pulled).
    pub async fn open_scratch(self) -> Result<Scratch, OpenError> {
        // Only linux asks the host anything first, in its own row.
        Ok(match self {
            BackendKind::Linux => {
                let (backend, dir) = Scratch::linux()?;
                Scratch::in_dir(OpenedBackend::Linux(backend), dir)
            }
            BackendKind::Local => {
                let (backend, dir) = Scratch::local()?;
                Scratch::in_dir(OpenedBackend::Local(backend), dir)
            }
            BackendKind::Memory => {
                Scratch::without_dir(OpenedBackend::Memory(verified(MemoryBackend::new())?))
            }
            BackendKind::Docker => Scratch::without_dir(OpenedBackend::Docker(verified(
                busybox_image::connect().await?,
            )?)),
        })
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
