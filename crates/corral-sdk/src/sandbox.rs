//! `Sandbox`: one sandbox of one backend, and the SDK's entry points.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{
    Backend, BackendError, CORRAL_LABEL, CreateRequest, ErrorCode, Labels, Limits, Network,
    SandboxInfo, Size,
};

use crate::error::{Result, SandboxError};

/// What [`Sandbox::create`] asks for. Every field left at its default asks
/// for the backend's documented default.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Compute size (CPUs, memory, disk).
    pub size: Size,
    /// Environment every command starts with.
    pub env: BTreeMap<String, String>,
    /// The network policy.
    pub network: Network,
    /// Ports to reach through previews.
    pub ports: Vec<u16>,
    /// Limits beyond size (process count).
    pub limits: Limits,
    /// Labels to attach; the SDK adds the `corral` label.
    pub labels: Labels,
    /// Restore from this snapshot.
    pub snapshot: Option<String>,
    /// Destroy after this long without any operation.
    pub idle_timeout: Option<Duration>,
    /// Destroy this long after creation.
    pub timeout: Option<Duration>,
    /// A unique name for get-or-create.
    pub key: Option<String>,
    /// The image to start from, where the backend has images.
    pub image: Option<String>,
}

pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) info: SandboxInfo,
    pub(crate) secrets: std::sync::RwLock<Vec<String>>,
}

/// One sandbox: cheap to clone, safe to share between tasks. `destroy` is
/// explicit and idempotent; dropping a `Sandbox` never destroys it.
#[derive(Clone)]
pub struct Sandbox {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("provider", &self.provider())
            .field("id", &self.id())
            .finish()
    }
}

impl Sandbox {
    /// Creates a sandbox on `backend`, labelled `corral`.
    pub async fn create(backend: Arc<dyn Backend>, options: CreateOptions) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let mut labels = options.labels;
        labels.insert(CORRAL_LABEL.to_string(), "1".to_string());
        let req = CreateRequest {
            size: options.size,
            env: options.env,
            network: options.network,
            ports: options.ports,
            limits: options.limits,
            labels,
            snapshot: options.snapshot,
            idle_timeout: options.idle_timeout,
            timeout: options.timeout,
            key: options.key,
            image: options.image,
        };
        let info = backend
            .create(req)
            .await
            .map_err(|e| SandboxError::from_backend(&provider, "create", e))?;
        Ok(Sandbox::from_info(backend, info))
    }

    /// Attaches to an existing sandbox `id` of `backend`; `not_found` when it is gone.
    pub async fn connect_id(backend: Arc<dyn Backend>, id: &str) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let info = backend
            .connect(id)
            .await
            .map_err(|e| SandboxError::from_backend(&provider, "connect", e))?;
        Ok(Sandbox::from_info(backend, info))
    }

    pub(crate) fn from_info(backend: Arc<dyn Backend>, info: SandboxInfo) -> Sandbox {
        Sandbox {
            inner: Arc::new(Inner {
                backend,
                info,
                secrets: std::sync::RwLock::new(Vec::new()),
            }),
        }
    }

    /// The sandbox's id, as its backend assigned it.
    pub fn id(&self) -> &str {
        &self.inner.info.id
    }

    /// The backend's name.
    pub fn provider(&self) -> &str {
        self.inner.backend.name()
    }

    /// What the backend reported when this handle was made.
    pub fn info(&self) -> &SandboxInfo {
        &self.inner.info
    }

    /// The backend this sandbox lives on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.inner.backend
    }

    /// Destroys the sandbox. Idempotent.
    pub async fn destroy(&self) -> Result<()> {
        self.inner
            .backend
            .destroy(self.id())
            .await
            .map_err(|e| self.error("destroy", e))
    }

    /// Translates a backend error raised during `operation`, with every
    /// known secret redacted from its message.
    pub(crate) fn error(&self, operation: &str, err: BackendError) -> SandboxError {
        self.fail(err.code, operation, err.message)
    }

    /// An SDK error for `operation`, with every known secret redacted.
    pub(crate) fn fail(
        &self,
        code: ErrorCode,
        operation: &str,
        message: impl Into<String>,
    ) -> SandboxError {
        let message = self.redact_text(&message.into());
        SandboxError::new(code, self.provider(), operation, message)
    }

    /// Registers a secret: from now on it is replaced by `[REDACTED]` in
    /// every output chunk, log, event and error message of this sandbox.
    pub fn add_secret(&self, secret: impl Into<String>) {
        let secret = secret.into();
        if secret.is_empty() {
            return;
        }
        if let Ok(mut secrets) = self.inner.secrets.write()
            && !secrets.contains(&secret)
        {
            secrets.push(secret);
        }
    }

    /// `text` with every known secret replaced by `[REDACTED]`.
    pub(crate) fn redact_text(&self, text: &str) -> String {
        let mut text = text.to_string();
        if let Ok(secrets) = self.inner.secrets.read() {
            for s in secrets.iter() {
                text = text.replace(s.as_str(), "[REDACTED]");
            }
        }
        text
    }
}
