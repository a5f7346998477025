//! The contract's runtime-free streams over a backend's tokio streams.
//!
//! - [`Sink`] (a process's input): ordered bytes, backpressure from the
//!   pipe, and `poll_close` = `shutdown` — a real half-close the child sees
//!   as EOF.
//! - [`Source`] (a process's output): the backend's stream as is — ordered,
//!   nothing lost or duplicated, a real EOF; chunking is the reader's.
//! - [`DiagnosticSource`] (a process's error stream): "diagnostic only … a
//!   bound and best-effort delivery". A task drains the backend's stream as
//!   fast as the process writes, keeping at most [`DIAGNOSTIC_BOUND_BYTES`]
//!   unread; what arrives beyond that is dropped. A consumer that never
//!   reads the error stream can therefore never block the process — the
//!   failure an undrained pipe would cause.
//!
//! The contract's traits are `Send + Sync`; the tokio streams are `Send`
//! only, so each is held in a `Mutex` that is reached through `&mut` (never
//! locked).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use corral_contract::{ByteSink, ByteSource, FailureReason, Operation, SandboxError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

use super::errors::failed;

/// Unread bytes the error stream keeps before it drops more.
pub(crate) const DIAGNOSTIC_BOUND_BYTES: usize = 1024 * 1024;

fn closed(_: std::io::Error) -> SandboxError {
    failed(Operation::OpenProcess, FailureReason::StreamClosed)
}

/// A process's input.
pub(crate) struct Sink {
    inner: Mutex<Pin<Box<dyn AsyncWrite + Send>>>,
}

impl Sink {
    pub(crate) fn new(inner: Pin<Box<dyn AsyncWrite + Send>>) -> Self {
        Self {
            inner: Mutex::new(inner),
        }
    }

    fn inner(self: Pin<&mut Self>) -> Pin<&mut (dyn AsyncWrite + Send)> {
        let inner = self.get_mut().inner.get_mut();
        inner.unwrap_or_else(PoisonError::into_inner).as_mut()
    }
}

impl ByteSink for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, SandboxError>> {
        self.inner().poll_write(cx, buf).map_err(closed)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        self.inner().poll_flush(cx).map_err(closed)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        self.inner().poll_shutdown(cx).map_err(closed)
    }
}

/// A process's output.
pub(crate) struct Source {
    inner: Mutex<Pin<Box<dyn AsyncRead + Send>>>,
}

impl Source {
    pub(crate) fn new(inner: Pin<Box<dyn AsyncRead + Send>>) -> Self {
        Self {
            inner: Mutex::new(inner),
        }
    }
}

impl ByteSource for Source {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let inner = self.get_mut().inner.get_mut();
        let inner = inner.unwrap_or_else(PoisonError::into_inner).as_mut();
        let mut read = ReadBuf::new(buf);
        match inner.poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(read.filled().len())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(closed(e))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A process's error stream, drained into a bounded buffer.
pub(crate) struct DiagnosticSource {
    chunks: Mutex<mpsc::UnboundedReceiver<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
    unread: Arc<AtomicUsize>,
}

impl DiagnosticSource {
    /// Starts draining `inner` on the current tokio runtime.
    pub(crate) fn spawn(mut inner: Pin<Box<dyn AsyncRead + Send>>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let unread = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&unread);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            loop {
                let n = match inner.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if counter.load(Ordering::Acquire) + n > DIAGNOSTIC_BOUND_BYTES {
                    continue;
                }
                counter.fetch_add(n, Ordering::AcqRel);
                // A receiver that is gone only means nobody reads: keep
                // draining so that the process never blocks on its stderr.
                let _ = tx.send(buf[..n].to_vec());
            }
        });
        Self {
            chunks: Mutex::new(rx),
            current: Vec::new(),
            at: 0,
            unread,
        }
    }
}

impl ByteSource for DiagnosticSource {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let this = self.get_mut();
        if this.at == this.current.len() {
            let chunks = this
                .chunks
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            match chunks.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => {
                    this.current = chunk;
                    this.at = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(0)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.len().min(this.current.len() - this.at);
        buf[..n].copy_from_slice(&this.current[this.at..this.at + n]);
        this.at += n;
        this.unread.fetch_sub(n, Ordering::AcqRel);
        Poll::Ready(Ok(n))
    }
}
