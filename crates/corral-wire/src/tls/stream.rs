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

use super::{CA_FILE_ENV, Trust};

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
    Tls(HandshakeError),
}

/// Why a TLS handshake with the server failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// No CA the client trusts issued the server's certificate.
    #[error(
        "the server's certificate is refused: UnknownIssuer: no trusted CA issued it (trust its \
         CA with {CA_FILE_ENV})"
    )]
    UnknownIssuer,
    /// The server's certificate is refused for another reason: expired,
    /// not for the endpoint's host, a CA certificate served as the
    /// server's own, …
    #[error("the server's certificate is refused: {0}")]
    Certificate(rustls::CertificateError),
    /// The handshake failed otherwise (a peer that speaks no TLS, no
    /// version or cipher in common, …).
    #[error("{0}")]
    Protocol(rustls::Error),
    /// The connection failed during the handshake.
    #[error("the handshake broke: {0}")]
    Io(io::Error),
}

impl HandshakeError {
    /// What a failed `connect` says, told apart.
    fn of(error: io::Error) -> Self {
        let rustls_error = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .cloned();
        match rustls_error {
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
                HandshakeError::UnknownIssuer
            }
            Some(rustls::Error::InvalidCertificate(why)) => HandshakeError::Certificate(why),
            Some(other) => HandshakeError::Protocol(other),
            None => HandshakeError::Io(error),
        }
    }
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
            .map_err(|e| ConnectError::Tls(HandshakeError::of(e)))?;
        Ok((ClientStream::Tls(Box::new(tls)), probe))
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
