//! `connect_port`: a TCP connection from the host to any port on a
//! sandbox's own loopback, declared at create or not.
//!
//! Every sandbox has its own network namespace. A socket keeps the network
//! namespace it was created in, so the connection is made on a short-lived
//! thread of its own that moves into the sandbox's namespace (through
//! `/proc/<init pid>/ns/net`, taken while the init's recorded start time
//! still names it, so a reused pid never leads elsewhere), connects to
//! `127.0.0.1:PORT` (else `[::1]:PORT`) and hands the connected socket
//! back. The thread ends right after; no other code ever runs in the
//! sandbox's namespace on it, and no thread of a shared pool is moved.
//!
//! It works the same for `network: none` and allowlisted sandboxes and
//! opens no way out: the connection only goes from the host in, as the
//! preview forwarder's do ([`crate::preview`]).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{
    BackendError, BoxedPortStream, PreviewError, Result, SandboxError, check_port, connect_failed,
};

use crate::state::{Meta, State, is_paused, process_start, require_meta};

/// How long a connection into the sandbox may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to `port` of sandbox `id` (see the module documentation).
pub async fn connect(state: Arc<State>, id: &str, port: u16) -> Result<BoxedPortStream> {
    check_port(port)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let id2 = id.to_string();
    std::thread::Builder::new()
        .name("corral-port".into())
        .spawn(move || {
            let _ = tx.send(live_meta(&state, &id2).and_then(|m| connect_inside(&m, port)));
        })
        .map_err(|e| PreviewError::ConnectFailed {
            id: id.to_string(),
            port,
            detail: format!("starting a thread: {e}"),
        })?;
    let stream = rx.await.map_err(|_| PreviewError::ConnectFailed {
        id: id.to_string(),
        port,
        detail: "the connecting thread ended without an answer".into(),
    })??;
    let made = stream
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpStream::from_std(stream));
    match made {
        Ok(stream) => Ok(Box::pin(stream)),
        Err(e) => Err(PreviewError::ConnectFailed {
            id: id.to_string(),
            port,
            detail: e.to_string(),
        }
        .into()),
    }
}

/// The record of sandbox `id` if it can take a connection now.
fn live_meta(state: &State, id: &str) -> Result<Meta> {
    let meta = require_meta(state, id)?;
    if is_paused(state, id) {
        return Err(SandboxError::Paused { id: id.to_string() }.into());
    }
    Ok(meta)
}

/// On a thread of its own: enters the sandbox's network namespace and
/// connects there. The thread must end once this returns.
fn connect_inside(meta: &Meta, port: u16) -> Result<TcpStream> {
    let netns = std::fs::File::open(format!("/proc/{}/ns/net", meta.init_pid));
    // Checked after the open: the descriptor names the sandbox's namespace
    // only if the pid was still its PID 1 then.
    if process_start(meta.init_pid) != Some(meta.init_start) {
        return Err(meta.dead_error());
    }
    let netns = netns.map_err(|e| entering(meta, port, &e.to_string()))?;
    rustix::thread::move_into_link_name_space(
        netns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| entering(meta, port, &e.to_string()))?;
    let v4 = TcpStream::connect_timeout(
        &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        CONNECT_TIMEOUT,
    );
    let first = match v4 {
        Ok(stream) => return Ok(relayed(stream)),
        Err(e) => e,
    };
    // A server bound to `::1` only: IPv6 loopback, when the sandbox has it.
    TcpStream::connect_timeout(
        &SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
        CONNECT_TIMEOUT,
    )
    .map(relayed)
    .map_err(|_| connect_failed(&meta.id, port, &first))
}

/// `stream` set up for relaying: what arrives is sent at once (no Nagle
/// delay waiting for the peer's delayed ACK).
fn relayed(stream: TcpStream) -> TcpStream {
    let _ = stream.set_nodelay(true);
    stream
}

fn entering(meta: &Meta, port: u16, detail: &str) -> BackendError {
    PreviewError::ConnectFailed {
        id: meta.id.clone(),
        port,
        detail: format!("entering the sandbox's network namespace: {detail}"),
    }
    .into()
}
