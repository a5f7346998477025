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

pub(super) struct Session {
    pub(super) state: Mutex<State>,
    out: Mutex<mpsc::UnboundedSender<Message>>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Option<SandboxError>>>>,
    pub(super) exit: watch::Sender<Exit>,
}

impl Session {
    pub(super) fn new(
        state: State,
        out: mpsc::UnboundedSender<Message>,
        exit: watch::Sender<Exit>,
    ) -> Self {
        Self {
            state: Mutex::new(state),
            out: Mutex::new(out),
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
            .out
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(message);
    }

    /// Switches to a new socket. Requests sent on the old one are dropped
    /// (their callers see the loss) in the same step, so none waits for an
    /// answer that cannot come.
    pub(super) fn switch(&self, out: mpsc::UnboundedSender<Message>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.clear();
        *self.out.lock().unwrap_or_else(|p| p.into_inner()) = out;
    }

    /// The socket was lost: writes wait, requests in flight fail.
    pub(super) fn lost(&self) {
        self.lock().stdin.resuming = true;
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

    /// Sends `frame` (built from a fresh id) and awaits its `settled`.
    pub(super) async fn request(
        &self,
        frame: impl FnOnce(u64) -> Frame,
    ) -> Option<Result<(), SandboxError>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
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
    pub(super) fn receive(&self, message: Message) -> Result<(), SandboxError> {
        match message {
            Message::Binary(bytes) => {
                let frame =
                    DataFrame::decode(&bytes).map_err(|e| invalid("data", "a data frame", e))?;
                if frame.stream == Stream::Stdin {
                    return Err(invalid("data.stream", "stdout or stderr", "stdin"));
                }
                let mut st = self.lock();
                let window = st.replay_window;
                let s = st.stream(frame.stream);
                let len = frame.payload.len() as u64;
                if s.eof || frame.offset != s.received {
                    return Err(invalid(
                        "data.offset",
                        &s.received.to_string(),
                        frame.offset,
                    ));
                }
                if s.received + len - s.acked > window {
                    return Err(invalid(
                        "data",
                        &format!("at most {window} unacknowledged bytes"),
                        s.received + len - s.acked,
                    ));
                }
                s.received += len;
                s.buf.extend(frame.payload);
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
                Ok(())
            }
            Message::Text(t) => {
                let frame: Frame =
                    serde_json::from_str(&t).map_err(|e| invalid("frame", "a control frame", e))?;
                self.control(frame)
            }
            _ => Ok(()),
        }
    }

    fn control(&self, frame: Frame) -> Result<(), SandboxError> {
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
                if offset != s.received {
                    return Err(invalid(
                        "half_close.offset",
                        &s.received.to_string(),
                        offset,
                    ));
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
            Frame::Error { error } => return Err(error),
            other => {
                return Err(invalid(
                    "frame",
                    "credit, data, half_close, exit, settled or error",
                    serde_json::to_string(&other).unwrap_or_default(),
                ));
            }
        }
        Ok(())
    }
}
