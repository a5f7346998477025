//! A client's connection to its server: TCP, or TLS over TCP for an
//! `https://` endpoint, one type for hyper and the WebSocket alike. A TLS
//! failure is told apart from a TCP one, so the first connection can name
//! a certificate problem instead of "unavailable".

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::Trust;

/// An open connection to the server.
#[derive(Debug)]
pub(crate) enum ClientStream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`, verified.
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The TCP connection failed.
    #[error("connecting: {0}")]
    Tcp(io::Error),
    /// The TLS handshake failed: a certificate not trusted, or not the
    /// server's name, or a peer that does not speak TLS.
    #[error("TLS: {0}")]
    Tls(String),
}

/// Where and how to reach the server.
#[derive(Debug, Clone)]
pub(crate) struct Dial {
    /// `HOST:PORT`.
    pub(crate) authority: String,
    /// The name the server's certificate must carry and what is trusted,
    /// for TLS.
    pub(crate) tls: Option<(ServerName<'static>, Trust)>,
}

impl Dial {
    /// A new connection, with `TCP_NODELAY` (a request's head and body
    /// are two writes that must not wait for a delayed ACK), and a
    /// duplicate of the TCP socket's descriptor (to peek at it).
    pub(crate) async fn open(&self) -> Result<(ClientStream, OwnedFd), ConnectError> {
        let tcp = TcpStream::connect(&self.authority)
            .await
            .map_err(ConnectError::Tcp)?;
        let _ = tcp.set_nodelay(true);
        let probe = tcp
            .as_fd()
            .try_clone_to_owned()
            .map_err(ConnectError::Tcp)?;
        let Some((name, trust)) = &self.tls else {
            return Ok((ClientStream::Plain(tcp), probe));
        };
        let tls = trust
            .connector()
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| ConnectError::Tls(tls_reason(&e)))?;
        Ok((ClientStream::Tls(Box::new(tls)), probe))
    }
}

/// What a failed handshake says: rustls' error when there is one (an
/// untrusted certificate, a wrong name), else the I/O error. An unknown
/// issuer says how to trust it.
fn tls_reason(error: &io::Error) -> String {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(why @ rustls::CertificateError::UnknownIssuer)) => {
            format!(
                "the server's certificate is refused: {why:?}: no trusted CA issued it (trust \
                 its CA with {})",
                super::CA_FILE_ENV
            )
        }
        Some(rustls::Error::InvalidCertificate(why)) => {
            format!("the server's certificate is refused: {why}")
        }
        Some(other) => other.to_string(),
        None => format!("handshake failed: {error}"),
    }
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_flush(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ClientStream::Plain(s) => s.is_write_vectored(),
            ClientStream::Tls(s) => s.is_write_vectored(),
        }
    }
}
