//! `preview_url`: where a sandbox's port is reachable from the host.
//!
//! The local backend isolates nothing: a server a command starts listens in
//! the host's own network namespace, so a sandbox port **is** a host port,
//! and its preview URL is `http://127.0.0.1:PORT`. Nothing is forwarded and
//! nothing reserves the port: two sandboxes declaring the same port share
//! it, and whoever binds it first serves both URLs. Only ports declared at
//! create get a URL, so that callers written against an isolating backend
//! (where undeclared ports are unreachable) behave the same here. A sandbox
//! with `network: none` cannot declare ports (its commands run in an empty
//! network namespace the host cannot reach): `create` refuses that.
//!
//! `connect_port` is as honest: any port of a sandbox is the host's
//! `127.0.0.1:PORT`, so it connects there (whoever listens on it, as the
//! URLs). A `network: none` sandbox's ports are out of reach: refused.

use std::collections::BTreeMap;

use corral_backend::{
    BackendError, BoxedPortStream, PreviewError, PreviewUrl, RequestError, Result, check_port,
    connect_failed,
};

use crate::state::{State, require_meta};

/// The preview URL of `port` of sandbox `id` (blocking): `invalid_input` for
/// port 0, `not_found` for a sandbox that does not exist or a port it did
/// not declare at create.
pub(crate) fn url(state: &State, id: &str, port: u16) -> Result<PreviewUrl> {
    if port == 0 {
        return Err(RequestError::PortZero.into());
    }
    let meta = require_meta(state, id)?;
    if !meta.ports.contains(&port) {
        return Err(PreviewError::PortNotDeclared {
            id: id.into(),
            port,
            declared: meta.ports.clone(),
        }
        .into());
    }
    Ok(PreviewUrl {
        url: format!("http://127.0.0.1:{port}"),
        headers: BTreeMap::new(),
        expires_at_ms: None,
    })
}

/// The sandbox `id` whose `port` can be connected to (blocking):
/// `invalid_input` for port 0, `not_found` for a missing sandbox,
/// `unsupported` for a `network: none` one.
pub(crate) fn check_connect(state: &State, id: &str, port: u16) -> Result<()> {
    check_port(port)?;
    let meta = require_meta(state, id)?;
    if meta.network_none {
        return Err(BackendError::unsupported(
            crate::state::NAME,
            "reach a port of a network: none sandbox (its commands run in an empty network namespace)",
        ));
    }
    Ok(())
}

/// A connection to the host's `127.0.0.1:port`, which is sandbox `id`'s.
pub(crate) async fn connect(id: &str, port: u16) -> Result<BoxedPortStream> {
    let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    match tokio::net::TcpStream::connect(addr).await {
        Ok(stream) => {
            // Relayed: what arrives is sent at once, no Nagle delay.
            let _ = stream.set_nodelay(true);
            Ok(Box::pin(stream))
        }
        Err(e) => Err(connect_failed(id, port, &e)),
    }
}
