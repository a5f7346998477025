//! The `openProcess` WebSocket: one live process per socket, its stdin
//! under a credit window, its stdout and stderr under an acknowledgement
//! window, its exit sent once. A socket that ends before the process does
//! destroys the process (fail closed: this server keeps no session for a
//! `replay`).

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use corral_contract::{
    ByteSink, ByteSource, FailureReason, LiveProcess, Operation, SandboxError, SandboxProvider,
};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::Shared;
use super::http::{Body, refuse};
use crate::protocol::{
    DataFrame, Frame, MAX_CONTROL_FRAME_BYTES, MAX_DATA_FRAME_BYTES, REPLAY_WINDOW_BYTES, Refusal,
    Route, STDIN_WINDOW_BYTES, Stream,
};

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

fn text(frame: &Frame) -> Message {
    Message::text(serde_json::to_string(frame).unwrap_or_default())
}

/// What the socket reader hands the stdin feeder.
enum Stdin {
    Data(Vec<u8>),
    Close,
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
    let request = match tokio::time::timeout(OPEN_FRAME_BOUND, incoming.next()).await {
        Ok(Some(Ok(Message::Text(t)))) => match serde_json::from_str::<Frame>(&t) {
            Ok(Frame::Open { request }) => Some(request),
            Ok(Frame::Replay { .. }) => {
                let _ = out.send(text(&Frame::Error {
                    error: failed(FailureReason::StreamClosed),
                }));
                None
            }
            _ => {
                let _ = out.send(text(&Frame::Error {
                    error: failed(FailureReason::PlatformRejected),
                }));
                None
            }
        },
        _ => None,
    };
    let Some(request) = request else {
        drop(out);
        let _ = writer.await;
        return;
    };
    let mut process = match shared.provider.open_process(request).await {
        Ok(p) => p,
        Err(error) => {
            let _ = out.send(text(&Frame::Error { error }));
            drop(out);
            let _ = writer.await;
            return;
        }
    };
    let (Some(input), Some(output), Some(error)) = (
        process.take_input(),
        process.take_output(),
        process.take_error(),
    ) else {
        let _ = process.destroy().await;
        let _ = out.send(text(&Frame::Error {
            error: failed(FailureReason::StreamClosed),
        }));
        drop(out);
        let _ = writer.await;
        return;
    };
    let process: Arc<dyn LiveProcess> = Arc::from(process);
    let key = shared.registry.add_process(Arc::clone(&process));
    let _ = out.send(text(&Frame::Opened {
        evidence: process.evidence().clone(),
        stdin_window: STDIN_WINDOW_BYTES,
        replay_window: REPLAY_WINDOW_BYTES,
    }));

    let (stdout_acked, stdout_acks) = watch::channel(0u64);
    let (stderr_acked, stderr_acks) = watch::channel(0u64);
    let granted = Arc::new(AtomicU64::new(STDIN_WINDOW_BYTES));
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(pump(output, Stream::Stdout, stdout_acks, out.clone()));
    tasks.spawn(pump(error, Stream::Stderr, stderr_acks, out.clone()));
    tasks.spawn(feed(input, stdin_rx, Arc::clone(&granted), out.clone()));
    {
        let process = Arc::clone(&process);
        let out = out.clone();
        tasks.spawn(async move {
            if let Ok(exit) = process.wait().await {
                let _ = out.send(text(&Frame::Exit { exit }));
            }
        });
    }

    let mut stopping = shared.stopping.clone();
    let mut received: u64 = 0;
    let mut stdin_open = true;
    loop {
        let message = tokio::select! {
            m = incoming.next() => m,
            _ = stopping.wait_for(|s| *s) => None,
        };
        let violation = match message {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
            Some(Ok(Message::Binary(bytes))) => match DataFrame::decode(&bytes) {
                Ok(f)
                    if f.stream == Stream::Stdin
                        && stdin_open
                        && f.offset == received
                        && received + f.payload.len() as u64 <= granted.load(Ordering::SeqCst) =>
                {
                    received += f.payload.len() as u64;
                    let _ = stdin_tx.send(Stdin::Data(f.payload));
                    false
                }
                _ => true,
            },
            Some(Ok(Message::Text(t))) => match serde_json::from_str::<Frame>(&t) {
                Ok(Frame::Ack { stream, offset }) => match stream {
                    Stream::Stdout => {
                        stdout_acked.send_modify(|a| *a = (*a).max(offset));
                        false
                    }
                    Stream::Stderr => {
                        stderr_acked.send_modify(|a| *a = (*a).max(offset));
                        false
                    }
                    Stream::Stdin => true,
                },
                Ok(Frame::HalfClose {
                    stream: Stream::Stdin,
                    offset,
                }) if stdin_open && offset == received => {
                    stdin_open = false;
                    let _ = stdin_tx.send(Stdin::Close);
                    false
                }
                Ok(Frame::Signal { id, signal }) => {
                    let process = Arc::clone(&process);
                    let out = out.clone();
                    tokio::spawn(async move {
                        let error = process.signal(signal).await.err();
                        let _ = out.send(text(&Frame::Settled { id, error }));
                    });
                    false
                }
                Ok(Frame::Destroy { id }) => {
                    let process = Arc::clone(&process);
                    let out = out.clone();
                    tokio::spawn(async move {
                        let error = process.destroy().await.err();
                        let _ = out.send(text(&Frame::Settled { id, error }));
                    });
                    false
                }
                _ => true,
            },
            Some(Ok(_)) => false,
        };
        if violation {
            let _ = out.send(text(&Frame::Error {
                error: failed(FailureReason::PlatformRejected),
            }));
            break;
        }
    }
    // The socket ended (or broke the protocol, or the server stops): the
    // process does not outlive it.
    let _ = process.destroy().await;
    shared.registry.remove_process(key);
    tasks.shutdown().await;
    drop(out);
    let _ = writer.await;
}

/// Sends one output stream, never more than the window beyond what the
/// client acknowledged; then its `half_close`.
async fn pump(
    mut source: Pin<Box<dyn ByteSource>>,
    stream: Stream,
    mut acked: watch::Receiver<u64>,
    out: mpsc::UnboundedSender<Message>,
) {
    let mut offset: u64 = 0;
    let mut buf = vec![0u8; MAX_DATA_FRAME_BYTES];
    loop {
        let Ok(ack) = acked
            .wait_for(|a| offset.saturating_sub(*a) < REPLAY_WINDOW_BYTES)
            .await
            .map(|a| *a)
        else {
            return;
        };
        let room = REPLAY_WINDOW_BYTES - offset.saturating_sub(ack);
        let take = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let read = poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf[..take])).await;
        match read {
            Ok(0) | Err(_) => {
                // stderr is diagnostic; a failed stdout read is reported
                // as the end of the stream followed by a session error.
                let failed_read = read.is_err() && stream == Stream::Stdout;
                let _ = out.send(text(&Frame::HalfClose { stream, offset }));
                if failed_read {
                    let _ = out.send(text(&Frame::Error {
                        error: failed(FailureReason::StreamClosed),
                    }));
                }
                return;
            }
            Ok(n) => {
                let frame = DataFrame {
                    stream,
                    offset,
                    payload: buf[..n].to_vec(),
                };
                offset += n as u64;
                if out.send(Message::binary(frame.encode())).is_err() {
                    return;
                }
            }
        }
    }
}

/// Writes stdin into the process, granting credit as it is consumed.
async fn feed(
    mut sink: Pin<Box<dyn ByteSink>>,
    mut rx: mpsc::UnboundedReceiver<Stdin>,
    granted: Arc<AtomicU64>,
    out: mpsc::UnboundedSender<Message>,
) {
    let mut consumed: u64 = 0;
    let mut broken = false;
    while let Some(event) = rx.recv().await {
        match event {
            Stdin::Data(bytes) => {
                let mut rest = &bytes[..];
                while !broken && !rest.is_empty() {
                    match poll_fn(|cx| sink.as_mut().poll_write(cx, rest)).await {
                        Ok(0) | Err(_) => broken = true,
                        Ok(n) => rest = &rest[n..],
                    }
                }
                if !broken && poll_fn(|cx| sink.as_mut().poll_flush(cx)).await.is_err() {
                    broken = true;
                }
                // Bytes the process can no longer take are consumed all the
                // same (as a pipe whose reader exited): the credit window
                // must never stall the client.
                consumed += bytes.len() as u64;
                let offset = consumed + STDIN_WINDOW_BYTES;
                granted.store(offset, Ordering::SeqCst);
                let _ = out.send(text(&Frame::Credit { offset }));
            }
            Stdin::Close => {
                let _ = poll_fn(|cx| sink.as_mut().poll_close(cx)).await;
                return;
            }
        }
    }
}
