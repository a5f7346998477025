//! The connections a client keeps: HTTP/1.1 connections to its server,
//! each given back when a response has been read to its end and reused by
//! a later call (keep-alive), so a unary call costs one exchange rather
//! than a TCP handshake and an exchange.
//!
//! A connection is reused only while it is certainly idle and open: it
//! came back at the end of a response, it has been idle less than
//! [`IDLE_TIMEOUT`] (well under the server's head deadline, ten seconds by
//! default, after which the server closes it), hyper still holds it open,
//! and its socket has nothing to read — a peek at it (on a duplicate of
//! its descriptor) sees neither the server's end-of-stream nor unasked
//! bytes. A connection closed by the server is noticed here, before a
//! request is written to it. A response dropped before its end drops its
//! connection with it (and so closes it, which a server reads as the
//! caller gone).

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustix::net::RecvFlags;

use crate::tls::stream::{ConnectError, Dial};

/// The most idle connections a client keeps; more, given back at once
/// after a burst of concurrent calls, are closed.
pub(crate) const MAX_IDLE: usize = 8;

/// How long a connection may stay idle and still be reused: half the
/// server's default head deadline, so the client retires a connection
/// well before the server would close it under a request.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a connection given back may take to be ready for its next
/// request. It is ready within microseconds of its response's end unless
/// it is still writing a request body the server answered early; past
/// this, a fresh connection is cheaper than waiting.
const READY_WAIT: Duration = Duration::from_secs(1);

/// One HTTP/1.1 connection to the server.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) sender: SendRequest<Full<Bytes>>,
    /// A duplicate of the socket's descriptor, to peek at it; dropped with
    /// the sender, so the socket closes when both hyper and the pool are
    /// done with it.
    probe: OwnedFd,
    /// When it was given back.
    idle_since: Instant,
}

impl Conn {
    /// A new connection as `dial` says (TCP, or TLS over it), with
    /// `TCP_NODELAY`: a request's head and body are two writes, and with
    /// Nagle's algorithm the body waits for the server's delayed ACK
    /// (about 40 ms).
    pub(crate) async fn open(dial: &Dial) -> Result<Self, ConnectError> {
        let (stream, probe) = dial.open().await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ConnectError::Tcp(std::io::Error::other(e)))?;
        tokio::spawn(connection);
        Ok(Self {
            sender,
            probe,
            idle_since: Instant::now(),
        })
    }

    /// Whether the socket has something to read while no response is
    /// due: the server's end-of-stream or reset (it closed the
    /// connection), or bytes nobody asked for. Either way the connection
    /// cannot carry a request.
    fn ended_by_peer(&self) -> bool {
        let mut byte = [0u8; 1];
        match rustix::net::recv(
            &self.probe,
            &mut byte[..],
            RecvFlags::PEEK | RecvFlags::DONTWAIT,
        ) {
            Ok(_) => true,
            Err(e) => e != rustix::io::Errno::AGAIN && e != rustix::io::Errno::INTR,
        }
    }
}

/// The idle connections of one client, the most recently used last.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    idle: Mutex<VecDeque<Conn>>,
}

impl Pool {
    fn idle(&self) -> std::sync::MutexGuard<'_, VecDeque<Conn>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `conn`, idle from now, unless hyper closed it; past
    /// [`MAX_IDLE`] the longest idle is closed.
    fn give_back(&self, mut conn: Conn) {
        if conn.sender.is_closed() {
            return;
        }
        conn.idle_since = Instant::now();
        let mut idle = self.idle();
        idle.push_back(conn);
        while idle.len() > MAX_IDLE {
            idle.pop_front();
        }
    }

    /// An idle connection that is open and ready for a request, the most
    /// recently used first; every one found stale on the way is closed.
    pub(crate) async fn take(&self) -> Option<Conn> {
        loop {
            let mut conn = {
                let mut idle = self.idle();
                idle.retain(|c| c.idle_since.elapsed() < IDLE_TIMEOUT);
                idle.pop_back()?
            };
            if conn.sender.is_closed() || conn.ended_by_peer() {
                continue;
            }
            if conn.sender.is_ready() {
                return Some(conn);
            }
            if let Ok(Ok(())) = tokio::time::timeout(READY_WAIT, conn.sender.ready()).await {
                return Some(conn);
            }
        }
    }
}

/// A response's body. Read to its end, it gives its connection back to
/// the pool; dropped before, it closes the connection.
#[derive(Debug)]
pub(crate) struct ReplyBody {
    inner: Incoming,
    back: Option<(Conn, Arc<Pool>)>,
}

impl ReplyBody {
    /// `inner`, whose end gives `conn` back to `pool`.
    pub(crate) fn new(inner: Incoming, conn: Conn, pool: Arc<Pool>) -> Self {
        Self {
            inner,
            back: Some((conn, pool)),
        }
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some((conn, pool)) = self.back.take()
        {
            pool.give_back(conn);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn plain(addr: &str) -> Dial {
        Dial {
            authority: addr.to_string(),
            tls: None,
        }
    }

    /// A connection the server closed while it sat idle is never handed
    /// out, even before hyper noticed: the peek sees the end-of-stream.
    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_reused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let conn = Conn::open(&plain(&addr)).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert!(!conn.ended_by_peer(), "an open, quiet connection");
        drop(server);
        let pool = Pool::default();
        pool.idle().push_back(conn);
        assert!(pool.take().await.is_none());
        assert!(pool.idle().is_empty());
    }

    /// Bytes nobody asked for (a server's `408` on its head deadline, say)
    /// make a connection unusable too.
    #[tokio::test]
    async fn a_connection_with_unasked_bytes_is_not_reused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let conn = Conn::open(&plain(&addr)).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        server
            .write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            .await
            .unwrap();
        let pool = Pool::default();
        pool.idle().push_back(conn);
        assert!(pool.take().await.is_none());
        let mut byte = [0u8; 1];
        assert_eq!(server.read(&mut byte).await.unwrap(), 0, "it was closed");
    }

    /// An idle connection past [`IDLE_TIMEOUT`] is closed, not reused; at
    /// most [`MAX_IDLE`] are kept.
    #[tokio::test]
    async fn stale_and_surplus_connections_are_closed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let pool = Pool::default();
        let mut servers = Vec::new();
        for _ in 0..MAX_IDLE + 2 {
            pool.give_back(Conn::open(&plain(&addr)).await.unwrap());
            servers.push(listener.accept().await.unwrap().0);
        }
        assert_eq!(pool.idle().len(), MAX_IDLE);
        let long_ago = Instant::now().checked_sub(IDLE_TIMEOUT).unwrap();
        for conn in pool.idle().iter_mut() {
            conn.idle_since = long_ago;
        }
        assert!(pool.take().await.is_none());
        assert!(pool.idle().is_empty());
    }
}
