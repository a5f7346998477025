//! A lost `openProcess` socket is replaced: through a proxy that cuts
//! every connection mid-stream (`fault_proxy`), the client reconnects with `replay`, the
//! server resends what was not acknowledged, the client resends the stdin
//! the server did not get, and the output arrives whole, in order, once.
//! A `replay` for a session the server does not hold fails closed.

use super::common;
use super::fault_proxy;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use common::{provision_active, provision_request, read_to_end, serve, token, write_all};
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_wire::WireProvider;
use fault_proxy::{FaultProxy, Plan};
use tokio::net::TcpStream;

async fn read_exactly(source: &mut Pin<Box<dyn ByteSource>>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        let got = poll_fn(|cx| source.as_mut().poll_read(cx, &mut out[filled..]))
            .await
            .unwrap();
        assert!(got > 0, "EOF after {filled} of {n} bytes");
        filled += got;
    }
    out
}

// Contract spec, "openProcess": behind a network hop, stdout is lossless only
// inside a declared replay window; inside it, a lost socket loses and
// duplicates nothing, and stdin backpressure is the credit window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_socket_is_replaced_and_nothing_is_lost_or_duplicated() {
    let adapter =
        ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let proxy = FaultProxy::to(server.addr(), Plan::new()).await;
    let client = WireProvider::connect(&proxy.endpoint(), token())
        .await
        .unwrap();
    let runtime = Runtime::new(client).unwrap();
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let instance = provision_active(&runtime, request).await;
    let mut live = runtime
        .open_process(OpenProcessRequest {
            instance_id: instance.instance_id.clone(),
            process: common::cat(),
        })
        .await
        .unwrap();
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    let payload: Vec<u8> = (0..600_000u32).map(|i| (i % 253) as u8).collect();
    let (first, rest) = payload.split_at(200_000);

    write_all(&mut input, first).await;
    let head = read_exactly(&mut output, 100_000).await;
    proxy.cut();
    // Writing and reading go on across the cut.
    let reader = tokio::spawn(async move { read_to_end(&mut output).await });
    write_all(&mut input, &rest[..200_000]).await;
    // The second cut falls on the socket that replaced the first.
    proxy.await_sockets(2).await;
    proxy.cut();
    write_all(&mut input, &rest[200_000..]).await;
    poll_fn(|cx| input.as_mut().poll_close(cx)).await.unwrap();
    let tail = reader.await.unwrap();
    let mut echoed = head;
    echoed.extend(tail);
    assert_eq!(echoed.len(), payload.len());
    assert!(
        echoed == payload,
        "nothing lost, nothing duplicated, in order"
    );
    assert_eq!(
        live.wait().await.unwrap(),
        ProcessExit::Code(ExitCode::SUCCESS)
    );
    let opened = proxy.sockets();
    assert!(
        opened >= 3,
        "one socket opened the process and one replaced each cut: {opened}"
    );
    live.destroy().await.unwrap();
    runtime.destroy(instance.instance_id).await.unwrap();
    server.shut_down().await;
}

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

/// A raw, authenticated `openProcess` socket.
async fn raw_socket(addr: SocketAddr) -> Socket {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = format!("ws://{addr}/v1/open_process")
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert("authorization", token().header_value().parse().unwrap());
    headers.insert(
        "corral-contract-revision",
        corral_wire::protocol::CONTRACT_REVISION.parse().unwrap(),
    );
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(request, tcp)
        .await
        .unwrap()
        .0
}

/// The next control frame, skipping data.
async fn next_frame(socket: &mut Socket) -> Option<corral_wire::protocol::Frame> {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(t))) => return Some(serde_json::from_str(&t).unwrap()),
            Some(Ok(Message::Binary(_))) => continue,
            _ => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_takes_over_a_socket_the_server_still_thinks_alive() {
    use corral_wire::protocol::{Frame, Stream};
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let adapter =
        ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let client = WireProvider::connect(&server.endpoint(), token())
        .await
        .unwrap();
    let request = provision_request(client.capabilities(), "memory", RetentionMode::EphemeralZdr);
    let (instance, _) = client.provision(request).await.unwrap().into_parts();
    client.activate(instance.instance_id.clone()).await.unwrap();
    let open = Frame::Open {
        request: OpenProcessRequest {
            instance_id: instance.instance_id.clone(),
            process: common::cat(),
        },
    };
    let mut first = raw_socket(server.addr()).await;
    first
        .send(Message::text(serde_json::to_string(&open).unwrap()))
        .await
        .unwrap();
    let Some(Frame::Opened { evidence, .. }) = next_frame(&mut first).await else {
        panic!("expected opened");
    };
    let mut second = raw_socket(server.addr()).await;
    let replay = Frame::Replay {
        process_id: evidence.process_id.clone(),
        stdout_offset: 0,
        stderr_offset: 0,
    };
    second
        .send(Message::text(serde_json::to_string(&replay).unwrap()))
        .await
        .unwrap();
    assert_eq!(
        next_frame(&mut second).await,
        Some(Frame::Resumed { stdin_offset: 0 })
    );
    // The first socket is let go, not the process.
    assert_eq!(next_frame(&mut first).await, None);
    let close = Frame::HalfClose {
        stream: Stream::Stdin,
        offset: 0,
    };
    second
        .send(Message::text(serde_json::to_string(&close).unwrap()))
        .await
        .unwrap();
    let mut exit = None;
    while let Some(frame) = next_frame(&mut second).await {
        if let Frame::Exit { exit: e } = frame {
            exit = Some(e);
            break;
        }
    }
    assert_eq!(exit, Some(ProcessExit::Code(ExitCode::SUCCESS)));
    second.send(Message::Close(None)).await.unwrap();
    client.destroy(instance.instance_id).await.unwrap();
    server.shut_down().await;
}

// Contract spec, "openProcess": a long enough disconnection kills the Run
// (fails closed) rather than resuming a session the server no longer holds.
#[tokio::test]
async fn a_replay_for_a_session_the_server_does_not_hold_fails_closed() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let adapter =
        ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let mut socket = raw_socket(server.addr()).await;
    let replay = r#"{"frame":"replay","process_id":"p-404","stdout_offset":0,"stderr_offset":0}"#;
    socket.send(Message::text(replay)).await.unwrap();
    let Some(Ok(Message::Text(answer))) = socket.next().await else {
        panic!("expected an error frame");
    };
    let frame: corral_wire::protocol::Frame = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        frame,
        corral_wire::protocol::Frame::Error {
            error: SandboxError::operation_failed(
                Operation::OpenProcess,
                FailureReason::StreamClosed
            )
        }
    );
    server.shut_down().await;
}
