//! `connect_port`: any port a workload listens on inside the sandbox,
//! declared at create or not, is reached from the host through a
//! connection made in the sandbox's network namespace; also for
//! `network: none`. A closed port, port 0, a missing or destroyed sandbox
//! are each refused with one line.

use std::time::Duration;

use corral_backend::{
    Backend, BackendError, Command, CreateRequest, ErrorCode, Network, PreviewError, ProcessSpec,
};
use corral_backend_linux::LinuxBackend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{backend, run};

fn spec(cmd: Command) -> ProcessSpec {
    ProcessSpec::new(cmd)
}

/// One HTTP/1.0 GET of `path` through `connect_port` to `port` of `id`:
/// the whole answer, once the server inside is up (within ~30 s).
async fn get_through(b: &LinuxBackend, id: &str, port: u16, path: &str) -> String {
    let ops = b.port_connect_ops().expect("port_connect is declared");
    let mut last = None;
    for _ in 0..150 {
        let connected = ops.connect_port(id, port).await;
        if let Ok(mut s) = connected {
            let ask = format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n");
            s.write_all(ask.as_bytes()).await.unwrap();
            let mut text = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut text));
            read.await.expect("the answer ends").unwrap();
            return String::from_utf8_lossy(&text).into_owned();
        }
        last = connected.err();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the server in {id} never answered on port {port}: {last:?}");
}

/// Starts an HTTP server on `port` of `id`; it runs while the handle lives.
async fn serve_http(b: &LinuxBackend, id: &str, port: u16) -> corral_backend::StartedProcess {
    assert_eq!(
        run(b, id, "printf hello-port > /workspace/hello.txt")
            .await
            .0,
        0
    );
    let port = port.to_string();
    b.process_ops()
        .unwrap()
        .start_process(
            id,
            spec(
                Command::argv([
                    "python3",
                    "-m",
                    "http.server",
                    port.as_str(),
                    "--bind",
                    "127.0.0.1",
                    "--directory",
                    "/workspace",
                ])
                .unwrap(),
            ),
        )
        .await
        .unwrap()
}

async fn reaches_an_undeclared_port(test: &str, network: Network) {
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    assert!(b.capabilities().port_connect, "port_connect is declared");
    corral_backend::verify(&b).unwrap();
    let info = b
        .create(CreateRequest {
            network,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let id = info.id.clone();
    if run(&b, &id, "command -v python3").await.0 != 0 {
        eprintln!("skip: {test}: no python3 in the host image to serve HTTP");
        return;
    }
    let _server = serve_http(&b, &id, 8123).await;
    let answer = get_through(&b, &id, 8123, "/hello.txt").await;
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer:.200}");
    assert!(answer.ends_with("hello-port"), "{answer:.400}");

    // Nothing on the host's own 8123: the connection went into the sandbox.
    assert!(std::net::TcpStream::connect(("127.0.0.1", 8123)).is_err());

    // A closed port of the same sandbox is refused, with one line.
    let ops = b.port_connect_ops().unwrap();
    let e = ops.connect_port(&id, 8124).await.err().expect("refused");
    assert!(
        matches!(
            e,
            BackendError::Preview(PreviewError::NothingListening { port: 8124, .. })
        ),
        "{e:?}"
    );
    assert_eq!(e.code(), ErrorCode::Unavailable);
    assert!(!e.message().contains('\n'));

    b.destroy(&id).await.unwrap();
    let gone = ops.connect_port(&id, 8123).await.err().expect("gone");
    assert_eq!(gone.code(), ErrorCode::NotFound, "{gone}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_port_is_reached_through_connect_port() {
    reaches_an_undeclared_port(
        "an_undeclared_port_is_reached_through_connect_port",
        Network::Default,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_none_sandbox_is_reached_through_connect_port() {
    reaches_an_undeclared_port(
        "a_network_none_sandbox_is_reached_through_connect_port",
        Network::None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowlisted_sandbox_is_reached_through_connect_port() {
    let test = "an_allowlisted_sandbox_is_reached_through_connect_port";
    if LinuxBackend::available().is_ok() && corral_backend_linux::network::available().is_err() {
        println!("SKIP {test}: no allowlist machinery here");
        return;
    }
    // A documentation address: nothing is ever sent to it.
    let network = Network::Allowlist {
        destinations: vec![corral_backend::Destination::new("192.0.2.1", 80).unwrap()],
    };
    reaches_an_undeclared_port(test, network).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_port_connections_are_refused() {
    let test = "hostile_port_connections_are_refused";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    let ops = b.port_connect_ops().unwrap();
    let rows: Vec<(&str, String, u16, ErrorCode)> = vec![
        ("port 0", id.clone(), 0, ErrorCode::InvalidInput),
        ("nothing listens", id.clone(), 1, ErrorCode::Unavailable),
        (
            "top port, closed",
            id.clone(),
            u16::MAX,
            ErrorCode::Unavailable,
        ),
        (
            "unknown sandbox",
            "lnx-0000000000000000".into(),
            80,
            ErrorCode::NotFound,
        ),
        ("id with dots", "../../etc".into(), 80, ErrorCode::NotFound),
        (
            "id with a slash",
            "lnx-x/../y".into(),
            80,
            ErrorCode::NotFound,
        ),
        ("empty id", String::new(), 80, ErrorCode::NotFound),
    ];
    for (attack, sandbox, port, code) in rows {
        let e = ops
            .connect_port(&sandbox, port)
            .await
            .err()
            .unwrap_or_else(|| panic!("{attack}: connected"));
        assert_eq!(e.code(), code, "{attack}: {e}");
        assert!(!e.message().contains('\n'), "{attack}: {e}");
    }
    b.destroy(&id).await.unwrap();
}
