//! The client's state of one process session: what was received and not
//! yet read, what stdin was sent and not yet consumed (kept for a
//! `replay`), the exit, and the socket frames go to.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

use corral_contract::{FailureReason, Operation, ProcessExit, SandboxError};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::Message;

use crate::protocol::{DataFrame, Frame, Stream};

pub(super) fn failed(reason: FailureReason) -> SandboxError {
    SandboxError::operation_failed(Operation::OpenProcess, reason)
}

pub(super) fn invalid(field: &str, expected: &str, actual: impl ToString) -> SandboxError {
    SandboxError::SandboxProtocolInvalid {
        operation: Operation::OpenProcess,
        field: field.into(),
        expected: expected.into(),
        actual: actual.to_string(),
    }
}

pub(super) fn text(frame: &Frame) -> Message {
    Message::text(serde_json::to_string(frame).unwrap_or_default())
}

/// One output stream as received.
#[derive(Default)]
pub(super) struct Incoming {
    pub(super) buf: VecDeque<u8>,
    pub(super) received: u64,
    pub(super) consumed: u64,
    pub(super) acked: u64,
    pub(super) eof: bool,
    pub(super) waker: Option<Waker>,
}

/// Stdin as sent.
#[derive(Default)]
pub(super) struct Outgoing {
    pub(super) sent: u64,
    pub(super) credit: u64,
    pub(super) closed: bool,
    /// Sent bytes the provider has not consumed yet (from `sent -
    /// retained.len()` on), kept to resend after a `replay`.
    pub(super) retained: VecDeque<u8>,
    /// A reconnection is under way: writes wait.
    pub(super) resuming: bool,
    pub(super) waker: Option<Waker>,
}

pub(super) struct State {
    pub(super) stdout: Incoming,
    pub(super) stderr: Incoming,
    pub(super) stdin: Outgoing,
    pub(super) stdin_window: u64,
    pub(super) replay_window: u64,
    pub(super) failure: Option<SandboxError>,
}

impl State {
    pub(super) fn stream(&mut self, stream: Stream) -> &mut Incoming {
        match stream {
            Stream::Stderr => &mut self.stderr,
            Stream::Stdout | Stream::Stdin => &mut self.stdout,
        }
    }

    fn wake_all(&mut self) {
        for w in [
            self.stdout.waker.take(),
            self.stderr.waker.take(),
            self.stdin.waker.take(),
        ]
        .into_iter()
        .flatten()
        {
            w.wake();
        }
    }
}

pub(super) type Exit = Option<Result<ProcessExit, SandboxError>>;

/// Why a message from the server was not taken.
pub(super) enum Fault {
    /// A data frame (or a `half_close`) ahead of what was received: the
    /// frames between were lost or are late on this socket. The socket is
    /// abandoned and a `replay` resends from the received offsets.
    Gap,
    /// The session fails with this error.
    Fail(SandboxError),
}

impl From<SandboxError> for Fault {
    fn from(error: SandboxError) -> Self {
        Self::Fail(error)
    }
}

/// One socket's outgoing side: the queue its writer drains, and the
/// writer, which is stopped (never asked to close) when the socket is let
/// go, so that a socket the server may still believe alive does not end
/// the session with a `Close`.
pub(super) struct Link {
    pub(super) out: mpsc::UnboundedSender<Message>,
    pub(super) writer: tokio::task::AbortHandle,
}

pub(super) struct Session {
    pub(super) state: Mutex<State>,
    link: Mutex<Link>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Option<SandboxError>>>>,
    pub(super) exit: watch::Sender<Exit>,
}

impl Session {
    pub(super) fn new(state: State, link: Link, exit: watch::Sender<Exit>) -> Self {
        Self {
            state: Mutex::new(state),
            link: Mutex::new(link),
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            exit,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends one message on the current socket. A message that cannot be
    /// sent is lost with its socket; what matters of it (stdin bytes,
    /// acknowledgements, a half-close) is sent again after a `replay`.
    pub(super) fn send(&self, message: Message) {
        let _ = self
            .link
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .out
            .send(message);
    }

    /// Switches to a new socket. Requests sent on the old one are dropped
    /// (their callers see the loss) in the same step, so none waits for an
    /// answer that cannot come.
    pub(super) fn switch(&self, link: Link) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.clear();
        let old = std::mem::replace(
            &mut *self.link.lock().unwrap_or_else(|p| p.into_inner()),
            link,
        );
        old.writer.abort();
    }

    /// The socket was lost, or is let go: its writer stops (without a
    /// `Close`), writes wait, requests in flight fail.
    pub(super) fn lost(&self) {
        self.lock().stdin.resuming = true;
        self.link
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .writer
            .abort();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// After `resumed{stdin_offset}`: resends stdin from there (and its
    /// half-close), acknowledges what was read, and lets writes go on.
    /// `false` when the offset is outside what the client kept.
    pub(super) fn resume(&self, stdin_offset: u64) -> bool {
        let mut st = self.lock();
        let base = st.stdin.sent - st.stdin.retained.len() as u64;
        if stdin_offset < base || stdin_offset > st.stdin.sent {
            return false;
        }
        let skip = usize::try_from(stdin_offset - base).unwrap_or(0);
        let tail: Vec<u8> = st.stdin.retained.iter().skip(skip).copied().collect();
        for message in DataFrame::encode_chunks(Stream::Stdin, stdin_offset, &tail) {
            self.send(Message::binary(message));
        }
        if st.stdin.closed {
            let sent = st.stdin.sent;
            self.send(text(&Frame::HalfClose {
                stream: Stream::Stdin,
                offset: sent,
            }));
        }
        for stream in [Stream::Stdout, Stream::Stderr] {
            let s = st.stream(stream);
            s.acked = s.consumed;
            let offset = s.consumed;
            self.send(text(&Frame::Ack { stream, offset }));
        }
        st.stdin.resuming = false;
        st.wake_all();
        true
    }

    /// The offsets a `replay` names: the first stdout and stderr bytes not
    /// yet received.
    pub(super) fn received(&self) -> (u64, u64) {
        let st = self.lock();
        (st.stdout.received, st.stderr.received)
    }

    /// The session is over: streams not at EOF fail, `wait` fails unless
    /// the exit arrived, pending requests are dropped.
    pub(super) fn fail(&self, error: SandboxError) {
        {
            let mut st = self.lock();
            st.failure.get_or_insert(error.clone());
            st.wake_all();
        }
        self.exit.send_if_modified(|e| {
            if e.is_none() {
                *e = Some(Err(error));
                true
            } else {
                false
            }
        });
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Sends `frame` (built from a fresh id) and awaits its `settled`;
    /// `None` when the socket it went on was lost, or the session is over.
    pub(super) async fn request(
        &self,
        frame: impl FnOnce(u64) -> Frame,
    ) -> Option<Result<(), SandboxError>> {
        let (tx, rx) = oneshot::channel();
        {
            // Under the lock `fail` clears after recording the failure: a
            // request either sees the failure or is dropped by the clear,
            // so none waits for an answer that cannot come.
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if self.lock().failure.is_some() {
                return None;
            }
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            pending.insert(id, tx);
            self.send(text(&frame(id)));
        }
        match rx.await {
            Ok(None) => Some(Ok(())),
            Ok(Some(e)) => Some(Err(e)),
            Err(_) => None,
        }
    }

    /// Handles one message from the server.
    pub(super) fn receive(&self, message: Message) -> Result<(), Fault> {
        match message {
            Message::Binary(bytes) => {
                let frame =
                    DataFrame::decode(&bytes).map_err(|e| invalid("data", "a data frame", e))?;
                if frame.stream == Stream::Stdin {
                    return Err(invalid("data.stream", "stdout or stderr", "stdin").into());
                }
                let mut st = self.lock();
                let window = st.replay_window;
                let s = st.stream(frame.stream);
                take_data(s, frame, window)
            }
            Message::Text(t) => {
                let frame: Frame =
                    serde_json::from_str(&t).map_err(|e| invalid("frame", "a control frame", e))?;
                self.control(frame)
            }
            _ => Ok(()),
        }
    }

    fn control(&self, frame: Frame) -> Result<(), Fault> {
        match frame {
            Frame::Credit { offset } => {
                let mut st = self.lock();
                st.stdin.credit = st.stdin.credit.max(offset);
                let consumed = st.stdin.credit.saturating_sub(st.stdin_window);
                let base = st.stdin.sent - st.stdin.retained.len() as u64;
                let drop = consumed.clamp(base, st.stdin.sent) - base;
                st.stdin
                    .retained
                    .drain(..usize::try_from(drop).unwrap_or(0));
                if let Some(w) = st.stdin.waker.take() {
                    w.wake();
                }
            }
            Frame::HalfClose {
                stream: stream @ (Stream::Stdout | Stream::Stderr),
                offset,
            } => {
                let mut st = self.lock();
                let s = st.stream(stream);
                if offset > s.received && !s.eof {
                    return Err(Fault::Gap);
                }
                if offset != s.received {
                    return Err(
                        invalid("half_close.offset", &s.received.to_string(), offset).into(),
                    );
                }
                s.eof = true;
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            }
            Frame::Exit { exit } => {
                self.exit.send_if_modified(|e| {
                    let first = e.is_none();
                    if first {
                        *e = Some(Ok(exit));
                    }
                    first
                });
            }
            Frame::Settled { id, error } => {
                let waiter = self
                    .pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                if let Some(tx) = waiter {
                    let _ = tx.send(error);
                }
            }
            Frame::Error { error } => return Err(error.into()),
            other => {
                return Err(invalid(
                    "frame",
                    "credit, data, half_close, exit, settled or error",
                    serde_json::to_string(&other).unwrap_or_default(),
                )
                .into());
            }
        }
        Ok(())
    }
}

/// Takes one output data frame. The offsets decide: bytes already
/// received (a duplicate, or the overlap of a resend) are discarded; a
/// frame ahead of the received offset is a gap.
fn take_data(s: &mut Incoming, frame: DataFrame, window: u64) -> Result<(), Fault> {
    let end = frame.offset.saturating_add(frame.payload.len() as u64);
    if end <= s.received {
        return Ok(());
    }
    if s.eof {
        return Err(invalid("data.offset", "nothing past the half-close", frame.offset).into());
    }
    if frame.offset > s.received {
        return Err(Fault::Gap);
    }
    if end - s.acked > window {
        return Err(invalid(
            "data",
            &format!("at most {window} unacknowledged bytes"),
            end - s.acked,
        )
        .into());
    }
    let mut fresh = frame.payload;
    fresh.drain(..usize::try_from(s.received - frame.offset).unwrap_or(0));
    s.received = end;
    s.buf.extend(fresh);
    if let Some(w) = s.waker.take() {
        w.wake();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(offset: u64, payload: &[u8]) -> DataFrame {
        DataFrame {
            stream: Stream::Stdout,
            offset,
            payload: payload.to_vec(),
        }
    }

    // Contract spec, "openProcess": output delivers "ordered bytes ...
    // nothing lost, nothing duplicated"; the offsets decide what a frame
    // adds.
    #[test]
    fn duplicates_are_discarded_overlaps_trimmed_and_gaps_reported() {
        let mut s = Incoming::default();
        assert!(take_data(&mut s, frame(0, b"abcd"), 100).is_ok());
        // A duplicate adds nothing.
        assert!(take_data(&mut s, frame(0, b"abcd"), 100).is_ok());
        assert!(take_data(&mut s, frame(2, b"cd"), 100).is_ok());
        // An overlap adds only its new bytes.
        assert!(take_data(&mut s, frame(2, b"cdef"), 100).is_ok());
        assert_eq!(s.buf.iter().copied().collect::<Vec<u8>>(), b"abcdef");
        assert_eq!(s.received, 6);
        // A frame ahead of the received offset is a gap, and adds nothing.
        assert!(matches!(
            take_data(&mut s, frame(7, b"h"), 100),
            Err(Fault::Gap)
        ));
        assert_eq!(s.received, 6);
        // An offset at the end of the range does not overflow.
        assert!(matches!(
            take_data(&mut s, frame(u64::MAX, b"zz"), 100),
            Err(Fault::Gap)
        ));
        // Past the window: refused.
        assert!(matches!(
            take_data(&mut s, frame(6, &[0; 200]), 100),
            Err(Fault::Fail(SandboxError::SandboxProtocolInvalid { .. }))
        ));
        // After EOF, a duplicate is harmless and new bytes are refused.
        s.eof = true;
        assert!(take_data(&mut s, frame(4, b"ef"), 100).is_ok());
        assert!(matches!(
            take_data(&mut s, frame(6, b"g"), 100),
            Err(Fault::Fail(SandboxError::SandboxProtocolInvalid { .. }))
        ));
    }
}
