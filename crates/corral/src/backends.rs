//! Backends by name.
//!
//! The default is `linux` — corral's own isolation — wherever this host
//! allows it (root, overlayfs, namespaces). Elsewhere the CLI falls back to
//! `local`, which isolates next to nothing, and says so in one line on
//! stderr. `docker` is a container of the Docker Engine of `DOCKER_HOST`
//! (the local socket by default), started from `corral-test:busybox-curl`
//! unless `CORRAL_DOCKER_IMAGE` names another image already in the engine.
//!
//! `remote+http://HOST:PORT` is the backend a `corral serve` on another
//! machine (or this one) serves, reached over corral-wire with the bearer
//! token in the file `CORRAL_TOKEN_FILE` names.
//!
//! The typed openers ([`open_memory`], [`open_local`], [`open_linux`],
//! [`open_docker`]) are the one way each backend is opened; [`open`] and
//! `corral serve` both use them, and [`Enveloped`] pairs each backend with
//! the envelope it is presented under by the contract adapter.

use std::path::Path;
use std::sync::Arc;

use corral_backend::{Backend, verify};
use corral_backend_docker::DockerBackend;
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::SandboxProviderCapabilities;
use corral_runtime::adapter::envelopes;
use corral_wire::{RemoteBackend, Token};

use crate::error::CliError;

/// The backends this build knows.
pub const KNOWN: &[&str] = &["linux", "local", "memory", "docker"];

/// The prefix of a remote backend's name: `remote+http://HOST:PORT`.
pub const REMOTE_PREFIX: &str = "remote+";

/// The environment variable naming the file that holds a remote server's
/// bearer token.
pub const TOKEN_FILE_ENV: &str = "CORRAL_TOKEN_FILE";

/// Opens the backend called `name`, or the default when `None`, verified.
pub async fn open(name: Option<&str>) -> Result<Arc<dyn Backend>, CliError> {
    let backend: Arc<dyn Backend> = match name {
        None => default_backend()?,
        Some("linux") => Arc::new(open_linux()?),
        Some("local") => Arc::new(open_local()?),
        Some("memory") => Arc::new(open_memory()),
        Some("docker") => Arc::new(open_docker().await?),
        Some(other) => match other.strip_prefix(REMOTE_PREFIX) {
            Some(endpoint) => Arc::new(open_remote(endpoint).await?),
            None => {
                return Err(CliError::usage(format!(
                    "unknown backend {other:?}; known backends: {}, {REMOTE_PREFIX}http://HOST:PORT",
                    KNOWN.join(", ")
                )));
            }
        },
    };
    verify(&*backend)?;
    Ok(backend)
}

/// A fresh memory backend (its sandboxes live in this process only).
pub fn open_memory() -> MemoryBackend {
    MemoryBackend::new()
}

/// The local backend on the default state directory.
pub fn open_local() -> Result<LocalBackend, CliError> {
    Ok(LocalBackend::open(LocalBackend::default_state_dir())?)
}

/// The linux backend on the default state directory, or `unavailable`
/// naming why this host cannot run it.
pub fn open_linux() -> Result<LinuxBackend, CliError> {
    LinuxBackend::available().map_err(|why| {
        CliError::failure(
            "unavailable",
            format!("the linux backend cannot run here: {why}"),
        )
    })?;
    Ok(LinuxBackend::open(LocalBackend::default_state_dir())?)
}

/// Connects to the engine of `DOCKER_HOST` in the caller's runtime, with
/// the image `CORRAL_DOCKER_IMAGE` names (the test image by default).
pub async fn open_docker() -> Result<DockerBackend, CliError> {
    Ok(DockerBackend::connect_with_image(&docker_image()).await?)
}

/// The image docker sandboxes start from: `CORRAL_DOCKER_IMAGE`, or the
/// test image.
pub fn docker_image() -> String {
    std::env::var("CORRAL_DOCKER_IMAGE")
        .unwrap_or_else(|_| corral_backend_docker::DEFAULT_IMAGE.to_string())
}

/// Connects to the `corral serve` at `endpoint` (`http://HOST:PORT`) with
/// the token in the file [`TOKEN_FILE_ENV`] names.
pub async fn open_remote(endpoint: &str) -> Result<RemoteBackend, CliError> {
    let Some(path) = std::env::var_os(TOKEN_FILE_ENV) else {
        return Err(CliError::usage(format!(
            "--backend {REMOTE_PREFIX}{endpoint}: set {TOKEN_FILE_ENV} to the file holding the server's bearer token"
        )));
    };
    let token = Token::from_file(Path::new(&path))
        .map_err(|e| CliError::usage(format!("{TOKEN_FILE_ENV}: {e}")))?;
    Ok(RemoteBackend::connect(endpoint, token).await?)
}

/// A backend the contract adapter can present: the envelope that goes with
/// it (`corral_runtime::adapter::envelopes`), from what it declares on this
/// host.
pub trait Enveloped: Backend + Sized {
    /// The envelope to present this backend under.
    fn envelope(&self) -> SandboxProviderCapabilities;
}

impl Enveloped for MemoryBackend {
    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::memory()
    }
}

impl Enveloped for LocalBackend {
    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::local_for(&self.capabilities())
    }
}

impl Enveloped for LinuxBackend {
    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::linux_for(&self.capabilities())
    }
}

impl Enveloped for DockerBackend {
    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::docker_for(&self.capabilities())
    }
}

fn default_backend() -> Result<Arc<dyn Backend>, CliError> {
    match LinuxBackend::available() {
        Ok(()) => Ok(Arc::new(LinuxBackend::open(
            LocalBackend::default_state_dir(),
        )?)),
        Err(why) => {
            eprintln!("corral: notice: using the local backend, which isolates nothing: {why}");
            Ok(Arc::new(open_local()?))
        }
    }
}

/// The backend that issued `id`, from its prefix, unless one is named.
pub async fn for_id(named: Option<&str>, id: &str) -> Result<Arc<dyn Backend>, CliError> {
    if named.is_some() {
        return open(named).await;
    }
    if id.starts_with("mem-") {
        return Err(CliError::failure(
            "not_found",
            format!(
                "no sandbox with id {id:?}: memory sandboxes live only inside the process that created them"
            ),
        ));
    }
    if id.starts_with("loc-") {
        return open(Some("local")).await;
    }
    if id.starts_with("lnx-") {
        return open(Some("linux")).await;
    }
    if id.starts_with("dkr-") {
        return open(Some("docker")).await;
    }
    open(None).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_runtime::adapter::ContractAdapter;

    /// The adapter refuses "an envelope that overclaims the backend": each
    /// backend's paired envelope must be one its own adapter accepts.
    fn accepted<B: Enveloped + 'static>(backend: B) {
        let backend = Arc::new(backend);
        let envelope = backend.envelope();
        if let Err(e) = ContractAdapter::new(Arc::clone(&backend), envelope) {
            panic!("the adapter refused the paired envelope: {e}");
        }
    }

    #[test]
    fn the_memory_backend_is_paired_with_the_memory_envelope() {
        let backend = open_memory();
        assert_eq!(backend.envelope(), envelopes::memory());
        accepted(backend);
    }

    #[test]
    fn the_local_backend_is_paired_with_its_envelope_for_this_host() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::open(dir.path()).unwrap();
        assert_eq!(
            backend.envelope(),
            envelopes::local_for(&backend.capabilities())
        );
        accepted(backend);
    }

    #[test]
    fn the_linux_backend_is_paired_with_its_envelope_where_it_runs() {
        if let Err(why) = LinuxBackend::available() {
            eprintln!("skip: linux sandboxes are unavailable here: {why}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let backend = LinuxBackend::open(dir.path()).unwrap();
        assert_eq!(
            backend.envelope(),
            envelopes::linux_for(&backend.capabilities())
        );
        accepted(backend);
    }
}
