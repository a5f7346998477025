//! # corral-e2b
//!
//! E2B's public protocol over any corral backend, so that E2B's own SDKs
//! (`e2b` on PyPI and npm) run unmodified against `corral serve`:
//!
//! - the REST control plane: create, get, list, kill, set
//!   the timeout, connect, authenticated by `X-API-KEY`;
//! - envd's services: `process.Process` and
//!   `filesystem.Filesystem` over the Connect protocol with its JSON
//!   codec, `/files` and `/health`, routed to their sandbox by the
//!   `E2b-Sandbox-Id` header (or a `<port>-<id>.<domain>` Host) and
//!   authenticated by the sandbox's `X-Access-Token`;
//! - any other port of a sandbox (`get_host(port)`: a
//!   `<port>-<id>.<domain>` Host), HTTP and WebSocket, relayed over the
//!   backend's `connect_port`.
//!
//! [`E2bService`] is a [`corral_wire::server::Fallback`]: `corral serve`
//! hands it every request that is not a wire route, on the same listener.
//! With a state file ([`E2bConfig::state_file`]) the records of its
//! sandboxes outlive a restart ([`saved`], [`E2bService::restore`]); their
//! access tokens are derived from the API key ([`access_token`]).
//! What is served and what answers 501 is listed in `docs/e2b.md`.

pub mod access_token;
mod body;
mod control;
mod envd;
pub mod error;
mod proxy;
pub mod restore;
mod router;
pub mod saved;
mod state;
pub mod time;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use corral_backend::Backend;
use corral_wire::Token;
use corral_wire::server::{Fallback, FallbackFuture};
use hyper::Request;
use hyper::body::Incoming;

pub use error::{ConnectCode, E2bError, E2bResult, connect_code_of, http_status_of};

/// The envd version this service reports. The SDK gates features on it;
/// every gate it has up to this version is served here.
pub const ENVD_VERSION: &str = "0.6.4";

/// The template naming the backend's default image.
pub const BASE_TEMPLATE: &str = "base";

/// The home of the user commands run as, where relative paths resolve.
pub const USER_HOME: &str = "/home/user";

/// How a service is set up.
#[derive(Debug, Clone)]
pub struct E2bConfig {
    /// The sandbox domain given to the SDK (`domain` of a sandbox);
    /// `None` leaves the SDK's own.
    pub domain: Option<String>,
    /// The largest file `POST /files` takes, in bytes.
    pub max_file_bytes: u64,
    /// Upgraded connections (WebSockets) to sandbox ports relayed at once;
    /// past that an upgrade is refused with 429.
    pub max_tunnels: usize,
    /// Where the records of the sandboxes made through E2B's protocol are
    /// kept across restarts ([`saved`], read by [`E2bService::restore`]);
    /// `None` keeps them in memory only.
    pub state_file: Option<std::path::PathBuf>,
}

impl Default for E2bConfig {
    fn default() -> Self {
        E2bConfig {
            domain: None,
            max_file_bytes: 64 * 1024 * 1024,
            max_tunnels: proxy::relay::MAX_TUNNELS,
            state_file: None,
        }
    }
}

/// What every request of one service shares.
pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) api_key: Token,
    pub(crate) config: E2bConfig,
    pub(crate) sandboxes: Arc<state::Sandboxes>,
    pub(crate) seq: AtomicU64,
    pub(crate) watchers: Arc<envd::watch::Watchers>,
    /// Places for upgraded connections to sandbox ports ([`proxy`]).
    pub(crate) tunnels: Arc<tokio::sync::Semaphore>,
}

/// E2B's protocol over one backend.
#[derive(Clone)]
pub struct E2bService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for E2bService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E2bService")
            .field("backend", &self.inner.backend.name())
            .finish_non_exhaustive()
    }
}

impl E2bService {
    /// Serves `backend`, admitting control-plane requests whose `X-API-KEY`
    /// is `api_key`.
    pub fn new(backend: Arc<dyn Backend>, api_key: Token, config: E2bConfig) -> Self {
        let tunnels = Arc::new(tokio::sync::Semaphore::new(config.max_tunnels));
        let sandboxes = Arc::new(state::Sandboxes::new(config.state_file.clone()));
        E2bService {
            inner: Arc::new(Inner {
                backend,
                api_key,
                config,
                sandboxes,
                seq: AtomicU64::new(0),
                watchers: Arc::default(),
                tunnels,
            }),
        }
    }

    /// Takes back the sandboxes the state file names (see
    /// [`restore`]): call once, before serving. A state file that cannot
    /// be read, or is not valid, is refused in one line, and the service
    /// goes on with none of its records (the next change rewrites it).
    pub async fn restore(&self) -> Result<restore::Restored, saved::StateFileError> {
        restore::restore(&self.inner).await
    }

    /// Answers one request.
    pub async fn handle(&self, mut req: Request<Incoming>) -> corral_wire::server::FallbackReply {
        let watch = body::BodyWatch::of(&mut req);
        watch.settle(router::route(Arc::clone(&self.inner), req).await)
    }
}

impl Fallback for E2bService {
    fn call(&self, req: Request<Incoming>) -> FallbackFuture {
        let service = self.clone();
        Box::pin(async move { service.handle(req).await })
    }

    fn claims(&self, req: &Request<Incoming>) -> bool {
        proxy::target(req).is_some()
    }
}
