//! Previews: a sandbox port is a host port, reachable at
//! `http://127.0.0.1:PORT` for the ports declared at create.

use crate::common;
use corral_backend::rules::sp;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{backend, labels};
use corral_backend::{
    Backend, CancellationToken, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest,
    Network,
};

/// A port nothing listens on right now (bound, then released).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// One HTTP/1.0 GET of `/` at `127.0.0.1:port`; the whole response.
fn get(port: u16) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

#[tokio::test]
async fn declared_ports_get_a_loopback_url_and_others_are_refused() {
    let (_dir, b) = backend();
    assert!(b.capabilities().previews);
    let port = free_port();
    let info = b
        .create(CreateRequest {
            ports: vec![port],
            labels: labels("preview"),
            ..Default::default()
        })
        .await
        .unwrap();
    let preview = b.preview_url(&info.id, port).await.unwrap();
    assert_eq!(preview.url, format!("http://127.0.0.1:{port}"));
    assert!(preview.headers.is_empty());
    assert_eq!(preview.expires_at_ms, None);

    let other = if port == u16::MAX { port - 1 } else { port + 1 };
    let err = b.preview_url(&info.id, other).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert!(err.message().contains(&format!("port {other}")), "{err}");
    let err = b.preview_url(&info.id, 0).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");

    b.destroy(&info.id).await.unwrap();
    let err = b.preview_url(&info.id, port).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    let err = b.preview_url("loc-../../etc", port).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
}

#[tokio::test]
async fn ports_of_a_sandbox_without_network_are_refused() {
    let (_dir, b) = backend();
    let err = b
        .create(CreateRequest {
            ports: vec![8080],
            network: Network::None,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    assert!(b.list(&Default::default()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_server_in_the_sandbox_answers_at_its_preview_url() {
    let (_dir, b) = backend();
    let port = free_port();
    let info = b
        .create(CreateRequest {
            ports: vec![port],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut out = CollectedOutput::default();
    let probe = b
        .exec(
            &info.id,
            ExecRequest::new(Command::shell("command -v python3").unwrap()),
            &mut out,
        )
        .await
        .unwrap();
    if !probe.status.success() {
        eprintln!("skip: python3 is not on this host's PATH; no HTTP server to start");
        b.destroy(&info.id).await.unwrap();
        return;
    }
    b.files()
        .write(
            &info.id,
            &sp("/workspace/index.html"),
            b"hello preview\n",
            None,
        )
        .await
        .unwrap();
    let server = format!("python3 -m http.server {port} --bind 127.0.0.1");
    let backend = b.clone();
    let id = info.id.clone();
    let stop = CancellationToken::new();
    let abort = stop.clone();
    let task = tokio::spawn(async move {
        let mut sink = CollectedOutput::default();
        let mut req = ExecRequest::new(Command::shell(server).unwrap());
        req.timeout = Some(Duration::from_secs(60));
        req.abort = Some(abort);
        backend.exec(&id, req, &mut sink).await
    });
    let url = b.preview_url(&info.id, port).await.unwrap().url;
    let port_in_url: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let response = loop {
        match tokio::task::spawn_blocking(move || get(port_in_url))
            .await
            .unwrap()
        {
            Ok(r) => break r,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the server never answered at {url}: {e}"),
        }
    };
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    assert!(response.ends_with("hello preview\n"), "{response}");
    // Destroying the sandbox does not end a running exec (see `create`):
    // abort it, which kills the server's process group before it settles.
    stop.cancel();
    let err = task.await.unwrap().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Aborted, "{err}");
    b.destroy(&info.id).await.unwrap();
}
