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

use std::collections::BTreeMap;

use corral_backend::{PreviewError, PreviewUrl, RequestError, Result};

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
