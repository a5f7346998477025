//! The `openProcess` WebSocket: one live process per session, its stdin
//! under a credit window, its stdout and stderr under an acknowledgement
//! window, its exit sent once. A socket the client closes (or that breaks
//! the protocol) destroys the process; a socket that is lost parks the
//! session for [`REPLAY_RETENTION_SECONDS`], during which a `replay` on a
//! new socket continues it; after that the process is destroyed.

mod live;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use corral_contract::{FailureReason, LiveProcess, Operation, SandboxError, SandboxProvider};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::Shared;
use super::http::{Body, refuse};
use crate::protocol::{
    DataFrame, Frame, MAX_CONTROL_FRAME_BYTES, REPLAY_RETENTION_SECONDS, REPLAY_WINDOW_BYTES,
    Refusal, Route, STDIN_WINDOW_BYTES, Stream,
};
pub(crate) use live::Live;
use live::Stdin;

/// How long the server waits for the `open` frame.
const OPEN_FRAME_BOUND: Duration = Duration::from_secs(30);

fn failed(reason: FailureReason) -> SandboxError {
    SandboxError::operation_failed(Operation::OpenProcess, reason)
}

/// The socket's configuration: frames bounded by the protocol.
pub(crate) fn socket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_CONTROL_FRAME_BYTES + 16))
        .max_frame_size(Some(MAX_CONTROL_FRAME_BYTES + 16))
}

/// Answers the upgrade and starts the session on its own task.
pub(crate) fn upgrade<P: SandboxProvider + 'static>(
    shared: Arc<Shared<P>>,
    mut req: Request<Incoming>,
) -> Response<Body> {
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY) else {
        return refuse(Some(Route::OpenProcess), Refusal::MalformedBody);
    };
    let accept = derive_accept_key(key.as_bytes());
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let socket = WebSocketStream::from_raw_socket(
            TokioIo::new(upgraded),
            Role::Server,
            Some(socket_config()),
        )
        .await;
        session(shared, socket).await;
    });
    let mut response = Response::new(Body::default());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, v);
    }
    response
}

pub(super) fn text(frame: &Frame) -> Message {
    Message::text(serde_json::to_string(frame).unwrap_or_default())
}

/// How one socket of a session ended.
enum Ended {
    /// The client closed it, broke the protocol, or the server stops: the
    /// process is destroyed.
    Finally,
    /// It was lost, or showed a gap in stdin: the session is parked for a
    /// `replay`.
    Lost,
    /// A `replay` on another socket took the session over.
    Superseded,
}

async fn session<S, P>(shared: Arc<Shared<P>>, socket: WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    P: SandboxProvider + 'static,
{
    let (mut sink, mut incoming) = socket.split();
    let (out, mut outbox) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(async move {
        while let Some(message) = outbox.recv().await {
            if sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let refuse = |reason| {
        let _ = out.send(text(&Frame::Error {
            error: failed(reason),
        }));
    };
    let first = match tokio::time::timeout(OPEN_FRAME_BOUND, incoming.next()).await {
        Ok(Some(Ok(Message::Text(t)))) => serde_json::from_str::<Frame>(&t).ok(),
        _ => None,
    };
    let live = match first {
        Some(Frame::Open { request }) => match open(&shared, request).await {
            Ok(live) => {
                let _ = out.send(text(&Frame::Opened {
                    evidence: live.process.evidence().clone(),
                    stdin_window: STDIN_WINDOW_BYTES,
                    replay_window: REPLAY_WINDOW_BYTES,
                }));
                live.attach(out.clone(), None);
                Some(live)
            }
            Err(error) => {
                let _ = out.send(text(&Frame::Error { error }));
                None
            }
        },
        Some(Frame::Replay {
            process_id,
            stdout_offset,
            stderr_offset,
        }) => match shared.registry.session(&process_id) {
            Some(live) if live.attach(out.clone(), Some((stdout_offset, stderr_offset))) => {
                Some(live)
            }
            Some(live) => {
                refuse(FailureReason::PlatformRejected);
                finish(&shared, &live).await;
                None
            }
            None => {
                refuse(FailureReason::StreamClosed);
                None
            }
        },
        Some(_) => {
            refuse(FailureReason::PlatformRejected);
            None
        }
        None => None,
    };
    if let Some(live) = live {
        let (generation, takeover) = live.generation();
        match read(&shared, &live, &mut incoming, &out, generation, takeover).await {
            Ended::Finally => finish(&shared, &live).await,
            Ended::Lost => {
                park(&shared, live, generation);
                // Let the socket go without a `Close`: to a client that
                // still reads it (after a gap), a `Close` would end the
                // session; what was queued is resent by the `replay`.
                writer.abort();
                return;
            }
            Ended::Superseded => {}
        }
    }
    drop(out);
    let _ = writer.await;
}

/// Opens the process and starts its session.
async fn open<P: SandboxProvider + 'static>(
    shared: &Arc<Shared<P>>,
    request: corral_contract::OpenProcessRequest,
) -> Result<Arc<Live>, SandboxError> {
    let mut process = shared.provider.open_process(request).await?;
    let (Some(input), Some(output), Some(error)) = (
        process.take_input(),
        process.take_output(),
        process.take_error(),
    ) else {
        let _ = process.destroy().await;
        return Err(failed(FailureReason::StreamClosed));
    };
    let process: Arc<dyn LiveProcess> = Arc::from(process);
    let key = shared.registry.add_process(Arc::clone(&process));
    let id = process.evidence().process_id.clone();
    let live = Live::start(process, key, input, output, error);
    shared.registry.add_session(id, Arc::clone(&live));
    Ok(live)
}

/// Destroys the process of a session that ended for good.
async fn finish<P>(shared: &Shared<P>, live: &Live) {
    shared
        .registry
        .remove_session(&live.process.evidence().process_id);
    live.end().await;
    shared.registry.remove_process(live.key);
}

/// Keeps a lost session for a `replay`; destroys it when none took it
/// over in time.
fn park<P: SandboxProvider + 'static>(shared: &Arc<Shared<P>>, live: Arc<Live>, generation: u64) {
    live.detach_if(generation);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let mut stopping = shared.stopping.clone();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(REPLAY_RETENTION_SECONDS)) => {}
            _ = stopping.wait_for(|s| *s) => {}
        }
        if live.generation().0 == generation {
            finish(&shared, &live).await;
        }
    });
}

/// Reads one socket until it ends.
async fn read<P, S>(
    shared: &Shared<P>,
    live: &Arc<Live>,
    incoming: &mut S,
    out: &mpsc::UnboundedSender<Message>,
    generation: u64,
    mut takeover: tokio::sync::watch::Receiver<u64>,
) -> Ended
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let mut stopping = shared.stopping.clone();
    loop {
        // A takeover or a shutdown wins over a message read at the same
        // time: the old socket's last words must not end the session.
        let message = tokio::select! {
            biased;
            _ = stopping.wait_for(|s| *s) => return Ended::Finally,
            _ = takeover.wait_for(|g| *g != generation) => return Ended::Superseded,
            m = incoming.next() => m,
        };
        let verdict = match message {
            None | Some(Err(_)) => return Ended::Lost,
            Some(Ok(Message::Close(_))) => return Ended::Finally,
            Some(Ok(Message::Binary(bytes))) => match DataFrame::decode(&bytes) {
                Ok(f) if f.stream == Stream::Stdin => stdin(live, f),
                _ => Verdict::Violation,
            },
            Some(Ok(Message::Text(t))) => match serde_json::from_str::<Frame>(&t) {
                Ok(Frame::Ack {
                    stream: stream @ (Stream::Stdout | Stream::Stderr),
                    offset,
                }) => {
                    live.ack(stream, offset);
                    Verdict::Taken
                }
                Ok(Frame::HalfClose {
                    stream: Stream::Stdin,
                    offset,
                }) => half_close(live, offset),
                Ok(Frame::Signal { id, signal }) => {
                    let process = Arc::clone(&live.process);
                    let out = out.clone();
                    tokio::spawn(async move {
                        let error = process.signal(signal).await.err();
                        let _ = out.send(text(&Frame::Settled { id, error }));
                    });
                    Verdict::Taken
                }
                Ok(Frame::Destroy { id }) => {
                    let process = Arc::clone(&live.process);
                    let out = out.clone();
                    tokio::spawn(async move {
                        let error = process.destroy().await.err();
                        let _ = out.send(text(&Frame::Settled { id, error }));
                    });
                    Verdict::Taken
                }
                _ => Verdict::Violation,
            },
            Some(Ok(_)) => Verdict::Taken,
        };
        match verdict {
            Verdict::Taken => {}
            Verdict::Gap => return Ended::Lost,
            Verdict::Violation => {
                live.send(text(&Frame::Error {
                    error: failed(FailureReason::PlatformRejected),
                }));
                return Ended::Finally;
            }
        }
    }
}

/// What one stdin frame from the client amounts to.
enum Verdict {
    /// Taken (or already had: a duplicate).
    Taken,
    /// Ahead of what the server received: the frames between were lost or
    /// are late on this socket; the socket is let go, and the client's
    /// `replay` learns from `resumed` where to resend from.
    Gap,
    /// A protocol violation: the session ends.
    Violation,
}

/// Takes stdin's `half_close`: at the received offset it closes the
/// process's input (once; a duplicate is taken as is); ahead of it, a gap.
fn half_close(live: &Live, offset: u64) -> Verdict {
    let received = live.received.load(Ordering::SeqCst);
    if offset > received {
        return Verdict::Gap;
    }
    if offset < received {
        return Verdict::Violation;
    }
    if live.stdin_open.swap(false, Ordering::SeqCst) {
        let _ = live.stdin.send(Stdin::Close);
    }
    Verdict::Taken
}

/// Takes one stdin data frame: in order, within the credit. The offsets
/// decide: bytes the server already received (a duplicate, or stdin resent
/// after a `resumed`) are skipped, and a frame ahead of them is a gap.
fn stdin(live: &Live, frame: DataFrame) -> Verdict {
    let received = live.received.load(Ordering::SeqCst);
    let end = frame.offset.saturating_add(frame.payload.len() as u64);
    if end <= received {
        return Verdict::Taken;
    }
    if !live.stdin_open.load(Ordering::SeqCst) || end > live.granted.load(Ordering::SeqCst) {
        return Verdict::Violation;
    }
    if frame.offset > received {
        return Verdict::Gap;
    }
    // The bytes already received are cut off the front; the decoded
    // payload is handed on without a copy.
    let mut fresh = frame.payload;
    fresh.drain(..usize::try_from(received - frame.offset).unwrap_or(0));
    live.received.store(end, Ordering::SeqCst);
    let _ = live.stdin.send(Stdin::Data(fresh));
    Verdict::Taken
}
