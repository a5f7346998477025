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
            let n = take_front(&mut s.buf, buf);
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

/// Moves as many bytes as fit from the front of `from` into `to` (two
/// slice copies at most: a byte-by-byte drain was the client's costliest
/// step on a fast stream); returns how many.
fn take_front(from: &mut std::collections::VecDeque<u8>, to: &mut [u8]) -> usize {
    let n = to.len().min(from.len());
    let (front, back) = from.as_slices();
    let first = n.min(front.len());
    to[..first].copy_from_slice(&front[..first]);
    to[first..n].copy_from_slice(&back[..n - first]);
    from.drain(..n);
    n
}

#[cfg(test)]
mod tests {
    use super::take_front;
    use std::collections::VecDeque;

    #[test]
    fn take_front_copies_across_the_ring_seam_in_order() {
        // A ring whose contents wrap: front and back slices both non-empty.
        let mut ring: VecDeque<u8> = VecDeque::with_capacity(8);
        ring.extend([0, 0, 0, 0, 0, 1, 2, 3]);
        ring.drain(..5);
        ring.extend([4, 5, 6, 7]);
        let (front, back) = ring.as_slices();
        assert!(!front.is_empty() && !back.is_empty(), "the test wraps");
        let mut out = [0u8; 5];
        assert_eq!(take_front(&mut ring, &mut out), 5);
        assert_eq!(out, [1, 2, 3, 4, 5]);
        let mut rest = [9u8; 4];
        assert_eq!(take_front(&mut ring, &mut rest), 2);
        assert_eq!(rest, [6, 7, 9, 9]);
        assert!(ring.is_empty());
        assert_eq!(take_front(&mut ring, &mut rest), 0);
    }
}
