//! The client half of `openProcess`: one WebSocket carrying the process's
//! stdin under the server's credit, its stdout and stderr acknowledged as
//! the reader consumes them, and its exit kept so `wait` is re-readable.
//! A socket that is lost (not closed) is replaced: the client reconnects,
//! sends `replay` with the offsets it received, resends the stdin the
//! server did not get, and the streams go on with nothing lost or
//! duplicated. Dropping the handle closes the socket; the server then
//! destroys the process.

mod session;
mod streams;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use corral_contract::{
    BoxFuture, ByteSink, ByteSource, ControlSignal, FailureReason, LiveProcess, OpenProcessRequest,
    ProcessExit, ProcessId, SandboxError, SandboxProcessEvidence,
};
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};

use super::transport::Transport;
use crate::protocol::{CONTRACT_REVISION, Frame, REVISION_HEADER, Route, Stream};
use crate::server::socket_config;
use crate::tls::stream::ClientStream;
use session::{Exit, Fault, Incoming, Link, Outgoing, Session, State, failed, invalid, text};
use streams::{Input, Output};

type Incoming_ = SplitStream<WebSocketStream<ClientStream>>;

/// How often, and after what pauses, a lost socket is replaced before the
/// session fails; all well inside the server's replay retention.
const RECONNECT_PAUSES: [Duration; 4] = [
    Duration::from_millis(50),
    Duration::from_millis(250),
    Duration::from_secs(1),
    Duration::from_secs(3),
];

/// How long the server may take to answer `open` or `replay`.
const ANSWER_BOUND: Duration = Duration::from_secs(60);

/// How many gaps in a row, each at the same received offsets (no byte
/// arrived in between), the client replays before it fails closed: a
/// server that keeps skipping the same bytes is broken, not unlucky.
const GAPS_WITHOUT_PROGRESS: u32 = 3;

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

/// Opens a socket and starts its writer; returns the writer's link and
/// the socket's incoming half.
async fn connect(transport: &Transport) -> Result<(Link, Incoming_), SandboxError> {
    let authority = transport.endpoint.authority();
    let scheme = match transport.dial.tls {
        Some(_) => "wss",
        None => "ws",
    };
    let url = format!("{scheme}://{authority}{}", Route::OpenProcess.path());
    let mut upgrade = url
        .into_client_request()
        .map_err(|e| invalid("endpoint", "a WebSocket URL", e))?;
    let headers = upgrade.headers_mut();
    let auth = HeaderValue::from_str(&transport.token.header_value())
        .map_err(|e| invalid("token", "a header value", e))?;
    headers.insert("authorization", auth);
    headers.insert(REVISION_HEADER, HeaderValue::from_static(CONTRACT_REVISION));
    // Frames are small writes; the stream waits for no delayed ACK.
    let (stream, _) = transport
        .dial
        .open()
        .await
        .map_err(|_| failed(FailureReason::PlatformUnavailable))?;
    let (socket, _) =
        tokio_tungstenite::client_async_with_config(upgrade, stream, Some(socket_config()))
            .await
            .map_err(handshake_error)?;
    let (mut sink, incoming) = socket.split();
    let (out, mut outbox) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(async move {
        while let Some(message) = outbox.recv().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
    })
    .abort_handle();
    Ok((Link { out, writer }, incoming))
}

/// The server's first answer on a socket: a control frame.
async fn answer(incoming: &mut Incoming_) -> Result<Frame, SandboxError> {
    match tokio::time::timeout(ANSWER_BOUND, incoming.next()).await {
        Ok(Some(Ok(Message::Text(t)))) => {
            serde_json::from_str(&t).map_err(|e| invalid("frame", "a control frame", e))
        }
        _ => Err(failed(FailureReason::StreamClosed)),
    }
}

/// Replaces a lost socket: `Ok(incoming)` once the server `resumed`.
async fn reconnect(
    transport: &Transport,
    session: &Session,
    process_id: &ProcessId,
) -> Result<Incoming_, SandboxError> {
    let mut last = failed(FailureReason::StreamClosed);
    for pause in RECONNECT_PAUSES {
        tokio::time::sleep(pause).await;
        let (link, mut incoming) = match connect(transport).await {
            Ok(c) => c,
            Err(e) => {
                last = e;
                continue;
            }
        };
        let (stdout_offset, stderr_offset) = session.received();
        let _ = link.out.send(text(&Frame::Replay {
            process_id: process_id.clone(),
            stdout_offset,
            stderr_offset,
        }));
        match answer(&mut incoming).await {
            Ok(Frame::Resumed { stdin_offset }) => {
                session.switch(link);
                if !session.resume(stdin_offset) {
                    return Err(invalid(
                        "resumed.stdin_offset",
                        "an offset the client still holds",
                        stdin_offset,
                    ));
                }
                return Ok(incoming);
            }
            // The server holds no such session: final.
            Ok(Frame::Error { error }) => return Err(error),
            Ok(other) => {
                return Err(invalid(
                    "frame",
                    "resumed or error",
                    serde_json::to_string(&other).unwrap_or_default(),
                ));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Reads sockets until the session ends, replacing lost ones (and ones
/// that showed a gap).
async fn read(
    transport: Arc<Transport>,
    session: Arc<Session>,
    process_id: ProcessId,
    mut incoming: Incoming_,
) {
    let mut gaps = (0u32, (u64::MAX, u64::MAX));
    loop {
        let message = incoming.next().await;
        match message {
            // The server closed the session: final.
            Some(Ok(Message::Close(_))) => {
                session.fail(failed(FailureReason::StreamClosed));
                return;
            }
            Some(Ok(message)) => match session.receive(message) {
                Ok(()) => continue,
                Err(Fault::Gap) => {
                    let at = session.received();
                    gaps = if gaps.1 == at {
                        (gaps.0 + 1, at)
                    } else {
                        (1, at)
                    };
                    if gaps.0 > GAPS_WITHOUT_PROGRESS {
                        let error = invalid("data.offset", "the received offset", "a gap");
                        session.fail(error);
                        session.send(Message::Close(None));
                        return;
                    }
                }
                Err(Fault::Fail(e)) => {
                    session.fail(e);
                    session.send(Message::Close(None));
                    return;
                }
            },
            Some(Err(_)) | None => {}
        }
        // The socket is lost, or let go after a gap: it is dropped without
        // a `Close` (the server parks the session) and replaced.
        session.lost();
        drop(incoming);
        match reconnect(&transport, &session, &process_id).await {
            Ok(next) => incoming = next,
            Err(e) => {
                session.fail(e);
                return;
            }
        }
    }
}

impl WireProcess {
    pub(crate) async fn open(
        transport: &Arc<Transport>,
        request: OpenProcessRequest,
    ) -> Result<Self, SandboxError> {
        let (link, mut incoming) = connect(transport).await?;
        let _ = link.out.send(text(&Frame::Open { request }));
        let (evidence, stdin_window, replay_window) = match answer(&mut incoming).await? {
            Frame::Opened {
                evidence,
                stdin_window,
                replay_window,
            } => (evidence, stdin_window, replay_window),
            Frame::Error { error } => return Err(error),
            other => {
                return Err(invalid(
                    "frame",
                    "opened or error",
                    serde_json::to_string(&other).unwrap_or_default(),
                ));
            }
        };
        let (exit_tx, exit) = watch::channel(None);
        let state = State {
            stdout: Incoming::default(),
            stderr: Incoming::default(),
            stdin: Outgoing {
                credit: stdin_window,
                ..Outgoing::default()
            },
            stdin_window,
            replay_window: replay_window.max(1),
            failure: None,
        };
        let session = Arc::new(Session::new(state, link, exit_tx));
        let reader = tokio::spawn(read(
            Arc::clone(transport),
            Arc::clone(&session),
            evidence.process_id.clone(),
            incoming,
        ));
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
        self.session.send(Message::Close(None));
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

    /// Idempotent; settles `Ok` once the session is over for good.
    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            // A request lost with its socket is sent again on the next one;
            // once the session is over for good, the server has destroyed
            // the process (or will, when its replay retention ends).
            loop {
                if let Some(settled) = self.session.request(|id| Frame::Destroy { id }).await {
                    return settled;
                }
                if self.session.lock().failure.is_some() {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    }
}
