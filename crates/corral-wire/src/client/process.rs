//! The client half of `openProcess`: one WebSocket carrying the process's
//! stdin under the server's credit, its stdout and stderr acknowledged as
//! the reader consumes them, and its exit kept so `wait` is re-readable.
//! Dropping the handle closes the socket; the server then destroys the
//! process.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use corral_contract::{
    BoxFuture, ByteSink, ByteSource, ControlSignal, FailureReason, LiveProcess, OpenProcessRequest,
    Operation, ProcessExit, SandboxError, SandboxProcessEvidence,
};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};

use super::transport::Transport;
use crate::protocol::{
    CONTRACT_REVISION, DataFrame, Frame, MAX_DATA_FRAME_BYTES, REVISION_HEADER, Route, Stream,
};
use crate::server::socket_config;

fn failed(reason: FailureReason) -> SandboxError {
    SandboxError::operation_failed(Operation::OpenProcess, reason)
}

fn invalid(field: &str, expected: &str, actual: impl ToString) -> SandboxError {
    SandboxError::SandboxProtocolInvalid {
        operation: Operation::OpenProcess,
        field: field.into(),
        expected: expected.into(),
        actual: actual.to_string(),
    }
}

fn text(frame: &Frame) -> Message {
    Message::text(serde_json::to_string(frame).unwrap_or_default())
}

/// One output stream as received.
#[derive(Default)]
struct Incoming {
    buf: VecDeque<u8>,
    received: u64,
    consumed: u64,
    acked: u64,
    eof: bool,
    waker: Option<Waker>,
}

/// Stdin as sent.
#[derive(Default)]
struct Outgoing {
    sent: u64,
    credit: u64,
    closed: bool,
    waker: Option<Waker>,
}

struct State {
    stdout: Incoming,
    stderr: Incoming,
    stdin: Outgoing,
    stdin_window: u64,
    replay_window: u64,
    failure: Option<SandboxError>,
}

impl State {
    fn stream(&mut self, stream: Stream) -> &mut Incoming {
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

type Exit = Option<Result<ProcessExit, SandboxError>>;

struct Session {
    state: Mutex<State>,
    out: mpsc::UnboundedSender<Message>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Option<SandboxError>>>>,
    exit: watch::Sender<Exit>,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session is over: streams not at EOF fail, `wait` fails unless
    /// the exit arrived, pending requests are dropped.
    fn fail(&self, error: SandboxError) {
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
    async fn request(&self, frame: impl FnOnce(u64) -> Frame) -> Option<Result<(), SandboxError>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        if self.out.send(text(&frame(id))).is_err() {
            return None;
        }
        match rx.await {
            Ok(None) => Some(Ok(())),
            Ok(Some(e)) => Some(Err(e)),
            Err(_) => None,
        }
    }

    /// Handles one message from the server.
    fn receive(&self, message: Message) -> Result<(), SandboxError> {
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

/// A process running behind a corral-wire server.
pub(crate) struct WireProcess {
    evidence: SandboxProcessEvidence,
    session: Arc<Session>,
    input: Option<Pin<Box<dyn ByteSink>>>,
    output: Option<Pin<Box<dyn ByteSource>>>,
    error: Option<Pin<Box<dyn ByteSource>>>,
    exit: watch::Receiver<Exit>,
    reader: tokio::task::JoinHandle<()>,
}

/// The refusal of a failed WebSocket handshake: the server's contract
/// error when it sent one.
fn handshake_error(error: tungstenite::Error) -> SandboxError {
    match error {
        tungstenite::Error::Http(response) => response
            .body()
            .as_deref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_else(|| {
                invalid(
                    "response",
                    "a WebSocket upgrade",
                    format_args!("HTTP {}", response.status()),
                )
            }),
        _ => failed(FailureReason::PlatformUnavailable),
    }
}

impl WireProcess {
    pub(crate) async fn open(
        transport: &Transport,
        request: OpenProcessRequest,
    ) -> Result<Self, SandboxError> {
        let authority = transport.endpoint.authority();
        let url = format!("ws://{authority}{}", Route::OpenProcess.path());
        let mut upgrade = url
            .into_client_request()
            .map_err(|e| invalid("endpoint", "a WebSocket URL", e))?;
        let headers = upgrade.headers_mut();
        let auth = HeaderValue::from_str(&transport.token.header_value())
            .map_err(|e| invalid("token", "a header value", e))?;
        headers.insert("authorization", auth);
        headers.insert(REVISION_HEADER, HeaderValue::from_static(CONTRACT_REVISION));
        let tcp = TcpStream::connect(authority)
            .await
            .map_err(|_| failed(FailureReason::PlatformUnavailable))?;
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(upgrade, tcp, Some(socket_config()))
                .await
                .map_err(handshake_error)?;
        let (mut sink, mut incoming) = socket.split();
        let (out, mut outbox) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(message) = outbox.recv().await {
                let closing = matches!(message, Message::Close(_));
                if sink.send(message).await.is_err() || closing {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let _ = out.send(text(&Frame::Open { request }));
        let (evidence, stdin_window, replay_window) = match incoming.next().await {
            Some(Ok(Message::Text(t))) => match serde_json::from_str::<Frame>(&t) {
                Ok(Frame::Opened {
                    evidence,
                    stdin_window,
                    replay_window,
                }) => (evidence, stdin_window, replay_window),
                Ok(Frame::Error { error }) => return Err(error),
                Ok(other) => {
                    return Err(invalid(
                        "frame",
                        "opened or error",
                        serde_json::to_string(&other).unwrap_or_default(),
                    ));
                }
                Err(e) => return Err(invalid("frame", "opened or error", e)),
            },
            _ => return Err(failed(FailureReason::StreamClosed)),
        };
        let (exit_tx, exit) = watch::channel(None);
        let session = Arc::new(Session {
            state: Mutex::new(State {
                stdout: Incoming::default(),
                stderr: Incoming::default(),
                stdin: Outgoing {
                    credit: stdin_window,
                    ..Outgoing::default()
                },
                stdin_window,
                replay_window: replay_window.max(1),
                failure: None,
            }),
            out,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            exit: exit_tx,
        });
        let reader = {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                loop {
                    match incoming.next().await {
                        Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                            session.fail(failed(FailureReason::StreamClosed));
                            return;
                        }
                        Some(Ok(message)) => {
                            if let Err(e) = session.receive(message) {
                                session.fail(e);
                                let _ = session.out.send(Message::Close(None));
                                return;
                            }
                        }
                    }
                }
            })
        };
        Ok(Self {
            evidence,
            input: Some(Box::pin(Input(Arc::clone(&session)))),
            output: Some(Box::pin(Output(Arc::clone(&session), Stream::Stdout))),
            error: Some(Box::pin(Output(Arc::clone(&session), Stream::Stderr))),
            session,
            exit,
            reader,
        })
    }
}

impl Drop for WireProcess {
    fn drop(&mut self) {
        let _ = self.session.out.send(Message::Close(None));
        self.session.fail(failed(FailureReason::StreamClosed));
        self.reader.abort();
    }
}

impl LiveProcess for WireProcess {
    fn evidence(&self) -> &SandboxProcessEvidence {
        &self.evidence
    }

    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>> {
        self.input.take()
    }

    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.output.take()
    }

    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.error.take()
    }

    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        let mut exit = self.exit.clone();
        Box::pin(async move {
            match exit.wait_for(Option::is_some).await {
                Ok(settled) => settled
                    .clone()
                    .unwrap_or_else(|| Err(failed(FailureReason::StreamClosed))),
                Err(_) => Err(failed(FailureReason::StreamClosed)),
            }
        })
    }

    fn signal(&self, signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.session
                .request(|id| Frame::Signal { id, signal })
                .await
                .unwrap_or_else(|| Err(failed(FailureReason::StreamClosed)))
        })
    }

    /// Idempotent: once the socket is gone the server has destroyed the
    /// process, so a closed session settles `Ok`.
    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.session
                .request(|id| Frame::Destroy { id })
                .await
                .unwrap_or(Ok(()))
        })
    }
}

/// The process's input.
struct Input(Arc<Session>);

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
        if room == 0 {
            st.stdin.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf
            .len()
            .min(MAX_DATA_FRAME_BYTES)
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        let frame = DataFrame {
            stream: Stream::Stdin,
            offset: st.stdin.sent,
            payload: buf[..n].to_vec(),
        };
        if self.0.out.send(Message::binary(frame.encode())).is_err() {
            return Poll::Ready(Err(failed(FailureReason::StreamClosed)));
        }
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
        if self.0.out.send(text(&frame)).is_err() {
            return Poll::Ready(Err(failed(FailureReason::StreamClosed)));
        }
        Poll::Ready(Ok(()))
    }
}

/// The process's stdout or stderr.
struct Output(Arc<Session>, Stream);

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
                let _ = self.0.out.send(text(&ack));
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
