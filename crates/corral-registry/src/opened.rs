//! [`OpenedBackend`]: an in-tree backend as its own type, paired with its
//! envelope ([`Enveloped`]), and [`BackendVisitor`], through which code
//! that needs the concrete type (a [`ContractAdapter`] is generic over
//! it) is written once for every backend.

use std::future::Future;
use std::sync::Arc;

use corral_backend::{Backend, Verified};
use corral_backend_docker::DockerBackend;
use corral_backend_linux::LinuxBackend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::{SandboxError, SandboxProviderCapabilities};
use corral_runtime::adapter::ContractAdapter;

use crate::envelopes;
use crate::kind::BackendKind;

/// A backend the contract adapter can present: which one it is, and the
/// envelope it is presented under ([`crate::envelopes`]), from what it
/// declares on this host.
pub trait Enveloped: Backend + Sized + 'static {
    /// Which in-tree backend this type is.
    const KIND: BackendKind;

    /// The envelope to present this backend under.
    fn envelope(&self) -> SandboxProviderCapabilities;
}

impl Enveloped for MemoryBackend {
    const KIND: BackendKind = BackendKind::Memory;

    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::memory()
    }
}

impl Enveloped for LocalBackend {
    const KIND: BackendKind = BackendKind::Local;

    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::local_for(&self.capabilities())
    }
}

impl Enveloped for LinuxBackend {
    const KIND: BackendKind = BackendKind::Linux;

    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::linux_for(&self.capabilities())
    }
}

impl Enveloped for DockerBackend {
    const KIND: BackendKind = BackendKind::Docker;

    fn envelope(&self) -> SandboxProviderCapabilities {
        envelopes::docker_for(&self.capabilities())
    }
}

/// The contract adapter over `backend`, under the envelope it is paired
/// with. `backend` is verified already (the registry opened it), so the
/// adapter does not run [`corral_backend::verify`] again: once per opened
/// backend, however many adapters are made over it.
pub fn adapter<B: Enveloped>(
    backend: &Verified<Arc<B>>,
) -> Result<ContractAdapter<B>, SandboxError> {
    ContractAdapter::from_verified(backend.clone(), backend.envelope())
}

/// Code written once for any in-tree backend as its own type
/// ([`OpenedBackend::visit`]).
pub trait BackendVisitor {
    /// What the visit gives back.
    type Output;

    /// Does the work with `backend`, verified when it was opened.
    fn visit<B: Enveloped>(self, backend: Verified<B>)
    -> impl Future<Output = Self::Output> + Send;
}

/// An opened in-tree backend, as its own type, verified
/// ([`corral_backend::verify`] ran once, when it was opened).
#[derive(Debug)]
pub enum OpenedBackend {
    /// See [`BackendKind::Linux`].
    Linux(Verified<LinuxBackend>),
    /// See [`BackendKind::Local`].
    Local(Verified<LocalBackend>),
    /// See [`BackendKind::Memory`].
    Memory(Verified<MemoryBackend>),
    /// See [`BackendKind::Docker`].
    Docker(Verified<DockerBackend>),
}

impl OpenedBackend {
    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            OpenedBackend::Linux(_) => LinuxBackend::KIND,
            OpenedBackend::Local(_) => LocalBackend::KIND,
            OpenedBackend::Memory(_) => MemoryBackend::KIND,
            OpenedBackend::Docker(_) => DockerBackend::KIND,
        }
    }

    /// The envelope the backend is presented under.
    pub fn envelope(&self) -> SandboxProviderCapabilities {
        match self {
            OpenedBackend::Linux(b) => b.envelope(),
            OpenedBackend::Local(b) => b.envelope(),
            OpenedBackend::Memory(b) => b.envelope(),
            OpenedBackend::Docker(b) => b.envelope(),
        }
    }

    /// The backend behind its primitives only.
    pub fn into_dyn(self) -> Arc<dyn Backend> {
        match self {
            OpenedBackend::Linux(b) => Arc::new(b.into_inner()),
            OpenedBackend::Local(b) => Arc::new(b.into_inner()),
            OpenedBackend::Memory(b) => Arc::new(b.into_inner()),
            OpenedBackend::Docker(b) => Arc::new(b.into_inner()),
        }
    }

    /// Hands the backend, as its own type, to `visitor`.
    pub async fn visit<V: BackendVisitor>(self, visitor: V) -> V::Output {
        match self {
            OpenedBackend::Linux(b) => visitor.visit(b).await,
            OpenedBackend::Local(b) => visitor.visit(b).await,
            OpenedBackend::Memory(b) => visitor.visit(b).await,
            OpenedBackend::Docker(b) => visitor.visit(b).await,
        }
    }
}
