//! The server: one provider behind `POST /v1/<member>` routes and the
//! `openProcess` WebSocket, with bearer-token authentication, per-route
//! body bounds, bounded connections ([`ConnectionLimits`]), TLS when given
//! a certificate ([`WireServer::with_tls`]) and a graceful shutdown.

mod backend;
mod body;
mod connection;
mod fallback;
mod http;
mod limits;
mod process;
mod registry;
mod unary;

pub use body::{BodyRefusal, read_bounded};
pub use fallback::{Fallback, FallbackFuture, FallbackReply};
pub use limits::{ConnectionLimits, raise_descriptor_limit};
pub(crate) use process::socket_config;
pub use registry::ShutdownReport;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use corral_backend::Backend;
use corral_contract::SandboxProvider;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::auth::Token;
use crate::client::Scheme;
use crate::tls::ServerTls;
use limits::Peers;
use registry::Registry;

/// What every connection of one server shares.
pub(crate) struct Shared<P> {
    pub(crate) provider: P,
    pub(crate) token: Token,
    pub(crate) registry: Registry,
    /// The backend behind the provider, when its primitives are served too
    /// (`/v1/backend/<member>`, for the `remote` backend).
    pub(crate) backend: Option<Arc<dyn Backend>>,
    /// The backend routes' streaming runs, for `abort_run`.
    pub(crate) runs: Arc<backend::Runs>,
    /// Flips to `true` when the server shuts down; live sessions watch it.
    pub(crate) stopping: watch::Receiver<bool>,
    /// The bounds of its connections.
    pub(crate) limits: ConnectionLimits,
    /// What answers the requests that are not wire routes.
    pub(crate) fallback: Option<Arc<dyn Fallback>>,
}

/// A bound server, not yet serving.
pub struct WireServer<P> {
    listener: TcpListener,
    shared: Arc<Shared<P>>,
    stop: watch::Sender<bool>,
    /// The certificate it serves TLS with; plain HTTP without one.
    tls: Option<ServerTls>,
}

impl<P: SandboxProvider + 'static> WireServer<P> {
    /// Binds `addr` (use port 0 for a free one) for `provider`, admitting
    /// only requests that present `token`.
    pub async fn bind(addr: SocketAddr, provider: P, token: Token) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let (stop, stopping) = watch::channel(false);
        Ok(Self {
            listener,
            shared: Arc::new(Shared {
                provider,
                token,
                registry: Registry::default(),
                backend: None,
                runs: Arc::default(),
                stopping,
                limits: ConnectionLimits::default(),
                fallback: None,
            }),
            stop,
            tls: None,
        })
    }

    /// Serves `backend`'s primitives as well, under `/v1/backend/<member>`,
    /// so that a `remote` backend on another machine can use it. `backend`
    /// should be the one behind `provider`: sandboxes made through either
    /// door are the same sandboxes.
    pub fn serving_backend(mut self, backend: Arc<dyn Backend>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.backend = Some(backend);
        }
        self
    }

    /// Hands every request whose path is not under `/v1/` to `fallback`
    /// (another protocol on the same listener), which authenticates it
    /// itself. Without one, such a request is refused as an unknown route.
    pub fn with_fallback(mut self, fallback: Arc<dyn Fallback>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.fallback = Some(fallback);
        }
        self
    }

    /// Holds its connections to `limits` instead of the defaults.
    pub fn with_limits(mut self, limits: ConnectionLimits) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.limits = limits;
        }
        self
    }

    /// Serves every connection over TLS with `tls` (the wire, the backend
    /// routes and the fallback alike): a connection that does not complete
    /// a handshake within the head deadline is closed.
    pub fn with_tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// `https` when it serves TLS, else `http`.
    pub fn scheme(&self) -> Scheme {
        match self.tls {
            Some(_) => Scheme::Https,
            None => Scheme::Http,
        }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then shuts down gracefully: stops
    /// accepting, ends every live process session (destroying its
    /// process), settles unsettled handoffs and open transactions, and
    /// destroys every instance it created that is not durable.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> ShutdownReport {
        let limits = self.shared.limits;
        let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        let peers = Arc::new(Peers::default());
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            // A place first: at the cap, the kernel's backlog holds the rest.
            let slot = tokio::select! {
                () = &mut shutdown => break,
                slot = Arc::clone(&slots).acquire_owned() => slot,
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            };
            let Ok(slot) = slot else { break };
            let (stream, peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) if limits::out_of_descriptors(&e) => {
                        tokio::time::sleep(limits.accept_backoff).await;
                        continue;
                    }
                    Err(_) => continue,
                },
            };
            let Some(peer_slot) = peers.admit(peer.ip(), limits.max_per_peer) else {
                drop(stream);
                continue;
            };
            // Streamed answers are many small writes (frames, envelopes):
            // with Nagle's algorithm each one after the first waits for the
            // client's delayed ACK, about 40 ms on Linux.
            let _ = stream.set_nodelay(true);
            let shared = Arc::clone(&self.shared);
            let tls = self.tls.clone();
            connections.spawn(async move {
                let _held = (slot, peer_slot);
                connection::serve(shared, stream, tls).await;
            });
        }
        drop(self.listener);
        // Processes first (each counted once, whatever its socket does),
        // then the sessions are told to end, then the connections.
        let report = self.shared.registry.shut_down(&self.shared.provider).await;
        let _ = self.stop.send(true);
        connections.shutdown().await;
        report
    }

    /// Serves on a task of the current runtime; the handle stops it.
    pub fn spawn(self) -> std::io::Result<RunningServer> {
        let addr = self.local_addr()?;
        let scheme = self.scheme();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(self.serve(async move {
            let _ = rx.await;
        }));
        Ok(RunningServer {
            addr,
            scheme,
            stop: Some(tx),
            task,
        })
    }
}

/// A server serving on a task.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    scheme: Scheme,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<ShutdownReport>,
}

impl RunningServer {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`https://ADDR` with TLS), the endpoint a client
    /// connects to.
    pub fn endpoint(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.addr)
    }

    /// Shuts it down gracefully and reports what the shutdown destroyed.
    pub async fn shut_down(mut self) -> ShutdownReport {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap_or_default()
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
