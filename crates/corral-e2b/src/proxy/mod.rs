//! `get_host(port)`: requests addressed to a sandbox's port other than
//! envd's, relayed to whatever listens on that port inside the sandbox.
//!
//! E2B's SDK gives `<port>-<sandboxID>.<domain>` for a port; a client
//! sends HTTP (or a WebSocket) to that host. A request is a port's when
//! - its `E2b-Sandbox-Port` header names a port other than envd's
//!   (the sandbox from `E2b-Sandbox-Id`, else from the Host), or
//! - its Host is `<digits>-<id>.<domain>` with a port other than envd's.
//!
//! A Host whose first label does not start with digits and a dash is no
//! sandbox's and routes as before. The sandbox must be one this service
//! made; the connection comes from the backend's `connect_port`
//! ([`corral_backend::PortConnectOps`]), and [`relay`] carries the
//! request over it.
//!
//! Like E2B's own default (`allowPublicTraffic`), the traffic is public:
//! it needs neither the API key nor a token, only the sandbox's id (a
//! sandbox asking for private traffic is refused at create).

pub mod relay;

use std::sync::Arc;

use hyper::Request;
use hyper::body::Incoming;
use hyper::header::HOST;

use crate::Inner;
use crate::body::{Reply, api_error};
use crate::envd::{ENVD_PORT, SANDBOX_ID_HEADER};
use crate::error::{E2bError, E2bResult};

/// The header naming the sandbox port a request is for (the SDK sends
/// envd's with `E2B_SANDBOX_URL`).
pub const SANDBOX_PORT_HEADER: &str = "E2b-Sandbox-Port";

/// A sandbox's port a request is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The sandbox's id.
    pub id: String,
    /// The port, never 0 and never envd's.
    pub port: u16,
}

/// The port of a Host's or a header's text: `BadPort` for digits that are
/// not a port (0, past 65535).
fn port_of(text: &str) -> E2bResult<u16> {
    text.parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| E2bError::BadPort {
            value: text.chars().take(32).collect(),
        })
}

/// The `<port>` and `<id>` of a Host `<port>-<id>.<domain>[:<port>]`, when
/// its first label starts with ASCII digits and a dash (the port is
/// unchecked text).
fn host_parts(host: &str) -> Option<(&str, &str)> {
    let (label, _domain) = host.split_once('.')?;
    let (port, id) = label.split_once('-')?;
    let digits = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    (digits && !id.is_empty()).then_some((port, id))
}

/// The port a request is addressed to: `None` when it is envd's or no
/// sandbox port's (it routes as before), `BadPort` when it names one that
/// is not a port, `Unrouted` when it names a port but no sandbox.
pub fn target<B>(req: &Request<B>) -> Option<E2bResult<Target>> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{fffd}"))
    };
    let host = header(HOST.as_str()).and_then(host_parts);
    let (port, id) = match header(SANDBOX_PORT_HEADER) {
        Some(port) => (port, header(SANDBOX_ID_HEADER).or(host.map(|(_, id)| id))),
        None => {
            let (port, id) = host?;
            (port, Some(id))
        }
    };
    let port = match port_of(port.trim()) {
        Ok(ENVD_PORT) => return None,
        Ok(port) => port,
        Err(e) => return Some(Err(e)),
    };
    let Some(id) = id.filter(|id| !id.is_empty()) else {
        return Some(Err(E2bError::Unrouted));
    };
    Some(Ok(Target {
        id: id.to_string(),
        port,
    }))
}

/// Relays one request addressed to a sandbox's port (see [`target`]).
pub async fn serve(inner: Arc<Inner>, req: Request<Incoming>, target: E2bResult<Target>) -> Reply {
    match target {
        Ok(target) => relay::relay(&inner, req, &target)
            .await
            .unwrap_or_else(|e| api_error(&e)),
        Err(e) => api_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().uri("/");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    /// What [`target`] gives, its error as text.
    type Routed = Option<Result<Target, String>>;
    /// A request's headers.
    type Headers = Vec<(&'static str, &'static str)>;

    fn ok(id: &str, port: u16) -> Routed {
        Some(Ok(Target {
            id: id.into(),
            port,
        }))
    }

    #[test]
    fn a_request_is_a_ports_by_its_host_or_its_headers() {
        let bad = |v: &str| Some(Err(E2bError::BadPort { value: v.into() }.to_string()));
        let unrouted = Some(Err(E2bError::Unrouted.to_string()));
        let rows: Vec<(&str, Headers, Routed)> = vec![
            (
                "a port's host",
                vec![("host", "8080-sb1.corral.local")],
                ok("sb1", 8080),
            ),
            (
                "with the server's port",
                vec![("host", "49999-sb1.x:3000")],
                ok("sb1", 49999),
            ),
            (
                "envd's host",
                vec![("host", "49983-sb1.corral.local")],
                None,
            ),
            ("the server itself", vec![("host", "127.0.0.1:3000")], None),
            ("no domain", vec![("host", "8080-sb1")], None),
            (
                "a dashed name",
                vec![("host", "api-server.example.com")],
                None,
            ),
            ("no id", vec![("host", "8080-.x")], None),
            ("port 0", vec![("host", "0-sb1.x")], bad("0")),
            ("port 65536", vec![("host", "65536-sb1.x")], bad("65536")),
            (
                "a long number",
                vec![("host", "99999999999999999999-sb1.x")],
                bad("99999999999999999999"),
            ),
            ("id with dots", vec![("host", "8080-a.b.c")], ok("a", 8080)),
            (
                "the SDK's envd headers",
                vec![("E2b-Sandbox-Id", "sb1"), ("E2b-Sandbox-Port", "49983")],
                None,
            ),
            (
                "a port by headers",
                vec![
                    ("E2b-Sandbox-Id", "sb1"),
                    ("E2b-Sandbox-Port", "8080"),
                    ("host", "127.0.0.1"),
                ],
                ok("sb1", 8080),
            ),
            (
                "the header's port wins",
                vec![("E2b-Sandbox-Port", "8081"), ("host", "8080-sb1.x")],
                ok("sb1", 8081),
            ),
            (
                "a non-numeric header",
                vec![("E2b-Sandbox-Id", "sb1"), ("E2b-Sandbox-Port", "http")],
                bad("http"),
            ),
            (
                "a port and no sandbox",
                vec![("E2b-Sandbox-Port", "8080")],
                unrouted,
            ),
            (
                "a header that is not text",
                vec![("E2b-Sandbox-Port", "\u{e9}")],
                bad("\u{fffd}"),
            ),
        ];
        for (what, headers, expected) in rows {
            let got = target(&req(&headers)).map(|r| r.map_err(|e| e.to_string()));
            assert_eq!(got, expected, "{what}");
        }
    }
}
