//! The optional port primitive: a TCP connection to a port on a sandbox's
//! own loopback, whatever port its workload listens on (declared at create
//! or not). It is how a server in front of the backend proxies traffic to
//! a sandbox's ports (E2B's `get_host(port)`).

use std::pin::Pin;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::{PreviewError, RequestError, Result};

/// A byte stream both ways: what [`PortConnectOps::connect_port`] hands
/// back. Any tokio stream that is `Send` is one.
pub trait PortStream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> PortStream for T {}

/// A connection to a sandbox's port, boxed so every backend returns one type.
pub type BoxedPortStream = Pin<Box<dyn PortStream>>;

/// Connections into a sandbox's own network.
#[async_trait]
pub trait PortConnectOps: Send + Sync {
    /// A TCP connection to `port` on sandbox `id`'s own loopback, opened
    /// from the host inward (it gives the sandbox no way out). Errors:
    /// `not_found` for a sandbox that is gone, `invalid_input` for port 0
    /// ([`check_port`]), `unavailable` with [`PreviewError::NothingListening`]
    /// when nothing accepts on the port, `conflict` for a paused sandbox.
    async fn connect_port(&self, id: &str, port: u16) -> Result<BoxedPortStream>;
}

/// Refuses port 0, which no workload listens on (every other `u16` is a
/// port). Call it where a port is first taken.
pub fn check_port(port: u16) -> Result<()> {
    if port == 0 {
        return Err(RequestError::PortZero.into());
    }
    Ok(())
}

/// The error for a connection to `port` of sandbox `id` that failed with
/// `error`: refused or reset means nothing listens there.
pub fn connect_failed(id: &str, port: u16, error: &std::io::Error) -> crate::BackendError {
    use std::io::ErrorKind as K;
    match error.kind() {
        K::ConnectionRefused | K::ConnectionReset | K::ConnectionAborted => {
            PreviewError::NothingListening {
                id: id.to_string(),
                port,
            }
            .into()
        }
        _ => PreviewError::ConnectFailed {
            id: id.to_string(),
            port,
            detail: error.to_string(),
        }
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn port_zero_is_refused_and_others_pass() {
        assert_eq!(check_port(0).unwrap_err().code(), ErrorCode::InvalidInput);
        for port in [1, 80, 49999, u16::MAX] {
            assert!(check_port(port).is_ok(), "{port}");
        }
    }

    #[test]
    fn a_refused_connection_is_nothing_listening() {
        use std::io::{Error, ErrorKind as K};
        let rows = [
            (K::ConnectionRefused, ErrorCode::Unavailable, true),
            (K::ConnectionReset, ErrorCode::Unavailable, true),
            (K::TimedOut, ErrorCode::Unavailable, false),
            (K::PermissionDenied, ErrorCode::Unavailable, false),
        ];
        for (kind, code, nothing) in rows {
            let e = connect_failed("sb-1", 8080, &Error::from(kind));
            assert_eq!(e.code(), code, "{kind:?}");
            assert_eq!(
                matches!(
                    e,
                    crate::BackendError::Preview(PreviewError::NothingListening { .. })
                ),
                nothing,
                "{kind:?}"
            );
            assert!(!e.message().contains('\n'));
        }
    }
}
