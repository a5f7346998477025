//! The `openProcess` relay: two WebSocket endpoints, one message at a
//! time in each direction, with the plan's frame faults applied.

use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::{Dir, FrameFault, State};

/// How long a swapped frame waits for a frame to go before it.
pub const HOLD: Duration = Duration::from_millis(100);

/// How long a `Drop` keeps discarding before it cuts the connection.
pub const LINGER: Duration = Duration::from_millis(25);

type Ws = WebSocketStream<TokioIo<Upgraded>>;

/// Relays until either side ends or a fault cuts the connection; then both
/// sockets are dropped without a `Close` of the proxy's own.
pub(super) async fn relay(client: Upgraded, server: Upgraded, state: &State) {
    let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, None).await;
    let server = WebSocketStream::from_raw_socket(TokioIo::new(server), Role::Client, None).await;
    let (to_client, from_client) = client.split();
    let (to_server, from_server) = server.split();
    tokio::select! {
        () = direction(from_client, to_server, Dir::Up, state) => {}
        () = direction(from_server, to_client, Dir::Down, state) => {}
    }
}

/// Discards what arrives for [`LINGER`].
async fn discard(from: &mut SplitStream<Ws>) {
    let _ = tokio::time::timeout(LINGER, async {
        while let Some(Ok(_)) = from.next().await {}
    })
    .await;
}

/// One direction; returns when its source ends, its sink fails, or a fault
/// cuts the connection.
async fn direction(
    mut from: SplitStream<Ws>,
    mut to: SplitSink<Ws, Message>,
    dir: Dir,
    state: &State,
) {
    let mut first = true;
    let mut held: Option<Message> = None;
    loop {
        let next = if held.is_some() {
            match tokio::time::timeout(HOLD, from.next()).await {
                Ok(next) => next,
                Err(_) => {
                    // Nothing came to go before it: it goes alone.
                    let Some(message) = held.take() else { continue };
                    if to.send(message).await.is_err() {
                        return;
                    }
                    continue;
                }
            }
        } else {
            from.next().await
        };
        let Some(Ok(message)) = next else {
            return;
        };
        let mut out = Vec::with_capacity(3);
        match message {
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            Message::Close(_) => {
                // The goodbye is never faulted, and nothing follows it.
                out.extend(held.take());
                out.push(message);
            }
            _ if first => out.push(message),
            _ => match state.decide(dir, &message) {
                None => out.push(message),
                Some(FrameFault::Delay(pause)) => {
                    tokio::time::sleep(pause).await;
                    out.push(message);
                }
                Some(FrameFault::Duplicate) => {
                    out.push(message.clone());
                    out.push(message);
                }
                Some(FrameFault::Swap) if held.is_none() => {
                    held = Some(message);
                    continue;
                }
                Some(FrameFault::Swap) => out.push(message),
                Some(FrameFault::Lose) => {}
                Some(FrameFault::Drop) => {
                    discard(&mut from).await;
                    return;
                }
                Some(FrameFault::Cut) => return,
            },
        }
        first = false;
        out.extend(held.take());
        for message in out {
            if to.send(message).await.is_err() {
                return;
            }
        }
    }
}
