//! The process's input and outputs, as the runtime reads and writes them.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use corral_contract::{ByteSink, ByteSource, FailureReason, SandboxError};
use tokio_tungstenite::tungstenite::Message;

use super::session::{Session, failed, text};
use crate::protocol::{DataFrame, Frame, MAX_DATA_FRAME_BYTES, Stream};

/// The process's input.
pub(super) struct Input(pub(super) Arc<Session>);

impl ByteSink for Input {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let mut st = self.0.lock();
        if let Some(f) = &st.failure {
            return Poll::Ready(Err(f.clone()));
        }
        if st.stdin.closed {
            return Poll::Ready(Err(failed(FailureReason::StreamClosed)));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let room = st.stdin.credit.saturating_sub(st.stdin.sent);
        if room == 0 || st.stdin.resuming {
            st.stdin.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf
            .len()
            .min(MAX_DATA_FRAME_BYTES)
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        self.0.send(Message::binary(DataFrame::encode_parts(
            Stream::Stdin,
            st.stdin.sent,
            &buf[..n],
        )));
        st.stdin.retained.extend(&buf[..n]);
        st.stdin.sent += n as u64;
        Poll::Ready(Ok(n))
    }

    /// Ready once the provider consumed every byte sent (its credit came
    /// back).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        let mut st = self.0.lock();
        if let Some(f) = &st.failure {
            return Poll::Ready(Err(f.clone()));
        }
        if st.stdin.closed || st.stdin.credit >= st.stdin.sent + st.stdin_window {
            return Poll::Ready(Ok(()));
        }
        st.stdin.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    fn poll_close(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SandboxError>> {
        if self.0.lock().stdin.closed {
            return Poll::Ready(Ok(()));
        }
        {
            let mut st = self.0.lock();
            if st.stdin.resuming && st.failure.is_none() {
                st.stdin.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        match self.as_mut().poll_flush(cx) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let mut st = self.0.lock();
        let offset = st.stdin.sent;
        st.stdin.closed = true;
        let frame = Frame::HalfClose {
            stream: Stream::Stdin,
            offset,
        };
        self.0.send(text(&frame));
        Poll::Ready(Ok(()))
    }
}

/// The process's stdout or stderr.
pub(super) struct Output(pub(super) Arc<Session>, pub(super) Stream);

impl ByteSource for Output {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let mut st = self.0.lock();
        let half = st.replay_window / 2;
        let failure = st.failure.clone();
        let s = st.stream(self.1);
        if !s.buf.is_empty() {
            let n = buf.len().min(s.buf.len());
            for (slot, byte) in buf.iter_mut().zip(s.buf.drain(..n)) {
                *slot = byte;
            }
            s.consumed += n as u64;
            if s.buf.is_empty() || s.consumed - s.acked >= half {
                s.acked = s.consumed;
                let ack = Frame::Ack {
                    stream: self.1,
                    offset: s.consumed,
                };
                self.0.send(text(&ack));
            }
            return Poll::Ready(Ok(n));
        }
        if s.eof {
            return Poll::Ready(Ok(0));
        }
        if let Some(f) = failure {
            return Poll::Ready(Err(f));
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
