//! `Sandbox`: one sandbox of one backend, and the SDK's entry points.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use corral_backend::Environment;
use corral_backend::{
    Backend, BackendError, CORRAL_LABEL, CreateRequest, ErrorCode, Labels, Limits, Network,
    SandboxInfo, Size,
};

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::locator::Locator;
use crate::provider::ProviderHints;
use crate::redact::Redactor;

/// The value of the `corral` label on every sandbox the SDK creates.
pub const CORRAL_LABEL_VALUE: &str = "1";

/// What [`Sandbox::create`] asks for. Every field left at its default asks
/// for the backend's documented default.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Compute size (CPUs, memory, disk).
    pub size: Size,
    /// Environment every command starts with.
    pub env: Environment,
    /// Environment every command starts with whose values are secrets: they
    /// are passed like `env` and registered with [`Sandbox::add_secret`], so
    /// they never appear in output, logs, events or errors of this handle.
    /// A name may not be in both `env` and `secret_env`.
    pub secret_env: Environment,
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
    pub key: Option<corral_backend::SandboxKey>,
    /// The image to start from, where the backend has images.
    pub image: Option<String>,
    /// End the sandbox with the process that created it, however that
    /// process ends (backends that declare `enforces.bound_to_creator`).
    pub bound_to_creator: bool,
}

pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) info: SandboxInfo,
    pub(crate) redactor: RwLock<Redactor>,
    /// What the backend's adapter said spares the core calls.
    pub(crate) hints: ProviderHints,
    /// The process record root as this sandbox's commands see it, learnt
    /// by the first `processes().start` (see `processes::start`).
    pub(crate) procs_dir_seen: tokio::sync::OnceCell<String>,
}

/// One sandbox: cheap to clone, safe to share between tasks. `destroy` is
/// explicit and idempotent; dropping a `Sandbox` never destroys it.
///
/// Secrets registered on a handle ([`add_secret`](Self::add_secret),
/// `secret_env`) are shared by its clones, but not by another handle made
/// with `connect` or `find`: register them there again.
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
    /// Creates a sandbox on `backend`, labelled `corral`, with no
    /// [`ProviderHints`] ([`crate::Provider::create`] gives them).
    pub async fn create(backend: Arc<dyn Backend>, options: CreateOptions) -> Result<Sandbox> {
        Sandbox::create_hinted(backend, ProviderHints::default(), options).await
    }

    /// [`Sandbox::create`] with `hints`.
    pub(crate) async fn create_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        options: CreateOptions,
    ) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let redactor = Redactor::new(options.secret_env.iter().map(|(_, v)| v.to_owned()));
        let env = merge_secret_env(options.env, options.secret_env).map_err(|msg| {
            SandboxError::new(ErrorCode::InvalidInput, &provider, Operation::Create, msg)
        })?;
        let mut labels = options.labels;
        labels
            .insert(CORRAL_LABEL, CORRAL_LABEL_VALUE)
            .map_err(|e| {
                SandboxError::new(
                    ErrorCode::InvalidInput,
                    &provider,
                    Operation::Create,
                    e.to_string(),
                )
            })?;
        let req = CreateRequest {
            size: options.size,
            env,
            network: options.network,
            ports: options.ports,
            limits: options.limits,
            labels,
            snapshot: options.snapshot,
            idle_timeout: options.idle_timeout,
            timeout: options.timeout,
            key: options.key,
            image: options.image,
            bound_to_creator: options.bound_to_creator,
            // Binds are asked for through the backend's request (the CLI's
            // `-v`); the SDK's options have none yet.
            binds: Default::default(),
        };
        let info = backend.create(req).await.map_err(|e| {
            SandboxError::new(
                e.code(),
                &provider,
                Operation::Create,
                redactor.redact(&e.message()),
            )
        })?;
        let sandbox = Sandbox::from_info(backend, hints, info);
        *sandbox.write_redactor() = redactor;
        Ok(sandbox)
    }

    /// Attaches to the sandbox a [`locator`](Self::locator) names. The
    /// locator's backend must be `backend`; a malformed locator fails with
    /// `invalid_input`, a sandbox that is gone with `not_found`. No
    /// [`ProviderHints`] ([`crate::Provider::connect`] gives them).
    pub async fn connect(backend: Arc<dyn Backend>, locator: &str) -> Result<Sandbox> {
        Sandbox::connect_hinted(backend, ProviderHints::default(), locator).await
    }

    /// [`Sandbox::connect`] with `hints`.
    pub(crate) async fn connect_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        locator: &str,
    ) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let invalid = |msg: String| {
            SandboxError::new(ErrorCode::InvalidInput, &provider, Operation::Connect, msg)
        };
        let parsed = Locator::parse(locator).map_err(invalid)?;
        if parsed.backend != provider {
            return Err(invalid(format!(
                "locator {locator:?} names the {} backend, not {provider}",
                parsed.backend
            )));
        }
        Sandbox::connect_id_hinted(backend, hints, &parsed.id).await
    }

    /// Attaches to an existing sandbox `id` of `backend`; `not_found` when
    /// it is gone. No [`ProviderHints`] ([`crate::Provider::connect_id`]
    /// gives them).
    pub async fn connect_id(backend: Arc<dyn Backend>, id: &str) -> Result<Sandbox> {
        Sandbox::connect_id_hinted(backend, ProviderHints::default(), id).await
    }

    /// [`Sandbox::connect_id`] with `hints`.
    pub(crate) async fn connect_id_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        id: &str,
    ) -> Result<Sandbox> {
        let provider = backend.name().to_string();
        let info = backend
            .connect(id)
            .await
            .map_err(|e| SandboxError::from_backend(&provider, Operation::Connect, e))?;
        Ok(Sandbox::from_info(backend, hints, info))
    }

    /// The sandbox created with `key`, if any. No [`ProviderHints`]
    /// ([`crate::Provider::find`] gives them).
    pub async fn find(backend: Arc<dyn Backend>, key: &str) -> Result<Option<Sandbox>> {
        let key = Sandbox::find_key(backend.as_ref(), key)?;
        Sandbox::find_hinted(backend, ProviderHints::default(), &key).await
    }

    /// The key the caller's `key` names: made here, where the caller's
    /// text enters, and refused as `find`'s `invalid_input`.
    pub(crate) fn find_key(backend: &dyn Backend, key: &str) -> Result<corral_backend::SandboxKey> {
        corral_backend::SandboxKey::new(key)
            .map_err(|e| SandboxError::from_backend(backend.name(), Operation::Find, e.into()))
    }

    /// [`Sandbox::find`] with `hints`.
    pub(crate) async fn find_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        key: &corral_backend::SandboxKey,
    ) -> Result<Option<Sandbox>> {
        let provider = backend.name().to_string();
        let found = backend
            .find(key)
            .await
            .map_err(|e| SandboxError::from_backend(&provider, Operation::Find, e))?;
        Ok(found.map(|info| Sandbox::from_info(backend, hints, info)))
    }

    /// Every sandbox whose labels hold each pair of `labels` (all of the
    /// backend's sandboxes for empty `labels`). No [`ProviderHints`]
    /// ([`crate::Provider::list`] gives them).
    pub async fn list(backend: Arc<dyn Backend>, labels: &Labels) -> Result<Vec<Sandbox>> {
        Sandbox::list_hinted(backend, ProviderHints::default(), labels).await
    }

    /// [`Sandbox::list`] with `hints`.
    pub(crate) async fn list_hinted(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        labels: &Labels,
    ) -> Result<Vec<Sandbox>> {
        let provider = backend.name().to_string();
        let infos = backend
            .list(labels)
            .await
            .map_err(|e| SandboxError::from_backend(&provider, Operation::List, e))?;
        Ok(infos
            .into_iter()
            .map(|info| Sandbox::from_info(backend.clone(), hints, info))
            .collect())
    }

    pub(crate) fn from_info(
        backend: Arc<dyn Backend>,
        hints: ProviderHints,
        info: SandboxInfo,
    ) -> Sandbox {
        Sandbox {
            inner: Arc::new(Inner {
                backend,
                info,
                redactor: RwLock::new(Redactor::default()),
                hints,
                procs_dir_seen: tokio::sync::OnceCell::new(),
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

    /// A string that names this sandbox, `corral:<backend>/<id>`; another
    /// process reattaches with [`Sandbox::connect`].
    pub fn locator(&self) -> String {
        Locator::new(self.provider(), self.id()).to_string()
    }

    /// What the backend reported when this handle was made.
    pub fn info(&self) -> &SandboxInfo {
        &self.inner.info
    }

    /// The backend this sandbox lives on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.inner.backend
    }

    /// The hints the backend was opened with ([`crate::Provider`]).
    pub fn hints(&self) -> ProviderHints {
        self.inner.hints
    }

    /// Destroys the sandbox. Idempotent: destroying one that is already
    /// gone succeeds.
    pub async fn destroy(&self) -> Result<()> {
        match self.inner.backend.destroy(self.id()).await {
            Ok(()) => Ok(()),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(()),
            Err(e) => Err(self.error(Operation::Destroy, e)),
        }
    }

    /// Translates a backend error raised during `operation`, with every
    /// known secret redacted from its message.
    pub(crate) fn error(&self, operation: Operation, err: BackendError) -> SandboxError {
        self.fail(err.code(), operation, err.message())
    }

    /// An SDK error for `operation`, with every known secret redacted.
    pub(crate) fn fail(
        &self,
        code: ErrorCode,
        operation: Operation,
        message: impl Into<String>,
    ) -> SandboxError {
        let message = self.redact_text(&message.into());
        SandboxError::new(code, self.provider(), operation, message)
    }

    /// Registers a secret: from now on it is replaced by `[REDACTED]` in
    /// every output chunk, log, event and error message of this sandbox
    /// handle and its clones. Empty strings are ignored.
    pub fn add_secret(&self, secret: impl Into<String>) {
        let mut guard = self.write_redactor();
        let next = guard.with(secret);
        *guard = next;
    }

    /// A snapshot of the secrets known now, to redact texts
    /// ([`Redactor::redact`]) or streams ([`Redactor::stream`]). Secrets
    /// added later are not in it.
    pub fn redactor(&self) -> Redactor {
        match self.inner.redactor.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn write_redactor(&self) -> std::sync::RwLockWriteGuard<'_, Redactor> {
        match self.inner.redactor.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// `text` with every known secret replaced by `[REDACTED]`.
    pub(crate) fn redact_text(&self, text: &str) -> String {
        self.redactor().redact(text)
    }
}

/// `env` with the variables of `secret_env` added, or why not: a name in
/// both. What `create` and `run` do with their two environments.
pub(crate) fn merge_secret_env(
    mut env: Environment,
    secret_env: Environment,
) -> std::result::Result<Environment, String> {
    if let Some(k) = secret_env.keys().find(|k| env.get(k.as_str()).is_some()) {
        return Err(format!(
            "environment variable {:?} is in both env and secret_env",
            k.as_str()
        ));
    }
    env.extend(secret_env);
    Ok(env)
}
