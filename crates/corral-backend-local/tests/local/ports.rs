//! `connect_port`: any port of a local sandbox is the host's
//! `127.0.0.1:PORT`, declared at create or not; a `network: none` sandbox's
//! ports, port 0, a closed port and a missing sandbox are each refused with
//! one line.

use std::time::Duration;

use corral_backend::{Backend, CreateRequest, ErrorCode, Network};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{backend, labels};

#[tokio::test]
async fn an_undeclared_port_is_connected_to_and_hostile_ones_are_refused() {
    let (_dir, b) = backend();
    assert!(b.capabilities().port_connect);
    corral_backend::verify(&b).unwrap();
    let info = b
        .create(CreateRequest {
            labels: labels("ports"),
            ..Default::default()
        })
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let echo = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        s.write_all(&buf).await.unwrap();
    });
    let ops = b.port_connect_ops().expect("declared");
    let mut s = ops.connect_port(&info.id, port).await.unwrap();
    s.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&back, b"ping");
    echo.await.unwrap();

    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let none = b
        .create(CreateRequest {
            network: Network::None,
            labels: labels("ports-none"),
            ..Default::default()
        })
        .await;
    let mut rows = vec![
        ("port 0", info.id.clone(), 0, ErrorCode::InvalidInput),
        (
            "a closed port",
            info.id.clone(),
            closed,
            ErrorCode::Unavailable,
        ),
        (
            "an unknown sandbox",
            "loc-0000000000000000".into(),
            port,
            ErrorCode::NotFound,
        ),
        (
            "an id with dots",
            "loc-../../etc".into(),
            port,
            ErrorCode::NotFound,
        ),
    ];
    // Where `network: none` is enforced, its commands' ports are out of reach.
    if let Ok(none) = &none {
        rows.push((
            "a network: none sandbox",
            none.id.clone(),
            port,
            ErrorCode::Unsupported,
        ));
    }
    for (attack, id, port, code) in rows {
        let e = ops
            .connect_port(&id, port)
            .await
            .err()
            .unwrap_or_else(|| panic!("{attack}"));
        assert_eq!(e.code(), code, "{attack}: {e}");
        assert!(!e.message().contains('\n'), "{attack}: {e}");
    }
    b.destroy(&info.id).await.unwrap();
    if let Ok(none) = none {
        b.destroy(&none.id).await.unwrap();
    }
}
