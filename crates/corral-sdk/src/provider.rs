//! [`Provider`]: a backend opened for the SDK core, with the
//! [`ProviderHints`] its adapter gives.
//!
//! The hints are the SDK specification's "Avoiding extra calls": an
//! adapter that does natively what the core would otherwise do through
//! extra calls says so, and the core leaves those calls out. They are not
//! members of the backend (`corral_backend::Capabilities`): nothing but the
//! core acts on them, so they are given where the core takes a backend.

use std::sync::Arc;

use corral_backend::{Backend, Labels};

use crate::error::Result;
use crate::sandbox::{CreateOptions, Sandbox};

/// What an adapter may tell the SDK core to spare it calls. Each hint
/// defaults to `false`, which is right for every backend: a hint given
/// wrongly breaks runs or writes, a hint left out costs a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderHints {
    /// The backend's `exec` creates and removes
    /// `ExecRequest::activity_path` itself, for the whole run — failure
    /// and cancellation included — so the core keeps the run's activity
    /// record through no file call (spec: `inlineActivity`).
    pub inline_activity: bool,
    /// The backend's `files.write` creates missing parent directories
    /// itself, so the core omits its `mkdir` before a write (spec:
    /// `files.writeCreatesParents`).
    pub write_creates_parents: bool,
}

/// A backend and the hints the core uses it with. Every [`Sandbox`] made
/// through a provider carries its hints; the `Sandbox` constructors that
/// take a bare backend use [`ProviderHints::default`].
///
/// ```no_run
/// # async fn demo() -> Result<(), corral_sdk::SandboxError> {
/// use std::sync::Arc;
/// use corral_sdk::{CreateOptions, Provider, ProviderHints};
///
/// let backend = Arc::new(corral_backend_memory::MemoryBackend::new());
/// let provider = Provider::new(backend).with_hints(ProviderHints::default());
/// let sandbox = provider.create(CreateOptions::default()).await?;
/// # let _ = sandbox;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Provider {
    backend: Arc<dyn Backend>,
    hints: ProviderHints,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("backend", &self.backend.name())
            .field("hints", &self.hints)
            .finish()
    }
}

impl From<Arc<dyn Backend>> for Provider {
    fn from(backend: Arc<dyn Backend>) -> Provider {
        Provider::new(backend)
    }
}

impl Provider {
    /// `backend` with no hints.
    pub fn new(backend: Arc<dyn Backend>) -> Provider {
        Provider {
            backend,
            hints: ProviderHints::default(),
        }
    }

    /// This provider with `hints` instead.
    pub fn with_hints(mut self, hints: ProviderHints) -> Provider {
        self.hints = hints;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The hints.
    pub fn hints(&self) -> ProviderHints {
        self.hints
    }

    /// [`Sandbox::create`], carrying this provider's hints.
    pub async fn create(&self, options: CreateOptions) -> Result<Sandbox> {
        Sandbox::create_hinted(self.backend.clone(), self.hints, options).await
    }

    /// [`Sandbox::connect`], carrying this provider's hints.
    pub async fn connect(&self, locator: &str) -> Result<Sandbox> {
        Sandbox::connect_hinted(self.backend.clone(), self.hints, locator).await
    }

    /// [`Sandbox::connect_id`], carrying this provider's hints.
    pub async fn connect_id(&self, id: &str) -> Result<Sandbox> {
        Sandbox::connect_id_hinted(self.backend.clone(), self.hints, id).await
    }

    /// [`Sandbox::find`], carrying this provider's hints.
    pub async fn find(&self, key: &str) -> Result<Option<Sandbox>> {
        let key = Sandbox::find_key(self.backend.as_ref(), key)?;
        Sandbox::find_hinted(self.backend.clone(), self.hints, &key).await
    }

    /// [`Sandbox::list`], carrying this provider's hints.
    pub async fn list(&self, labels: &Labels) -> Result<Vec<Sandbox>> {
        Sandbox::list_hinted(self.backend.clone(), self.hints, labels).await
    }

    /// [`Sandbox::get_or_create`], carrying this provider's hints.
    pub async fn get_or_create(&self, key: &str, options: CreateOptions) -> Result<Sandbox> {
        Sandbox::get_or_create_hinted(self.backend.clone(), self.hints, key, options).await
    }
}
