//! `network: none` on the local backend: commands run in a new, empty
//! network namespace, so nothing — not even the host's loopback — is
//! reachable, while a sandbox that asked for nothing keeps the host network.

use crate::common;
use std::io::{Read, Write};
use std::net::TcpListener;

use corral_backend::{Backend, CreateRequest, ExitStatus, Network};

/// A one-shot HTTP server on the host's loopback answering every connection.
fn host_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(8) {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        }
    });
    port
}

fn curl_script(port: u16) -> String {
    format!("curl -s -m 5 http://127.0.0.1:{port}/; echo \" exit=$?\"")
}

#[tokio::test]
async fn a_none_network_sandbox_reaches_nothing_not_even_host_loopback() {
    let (_dir, b) = common::backend();
    if !b.capabilities().enforces.network_none {
        println!(
            "SKIP: this host cannot start commands in a new network namespace (no usable `unshare --net`)"
        );
        return;
    }
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("curl is required by this test; scripts/test installs it");
    }
    let port = host_server();

    let open = b.create(CreateRequest::default()).await.unwrap();
    let (status, out) = common::sh(&b, &open.id, &curl_script(port)).await;
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello exit=0\n",
        "control: the default network reaches the host"
    );

    let closed = b
        .create(CreateRequest {
            network: Network::None,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let (_, out) = common::sh(&b, &closed.id, &curl_script(port)).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("hello"),
        "a none-network sandbox reached the host: {text}"
    );
    assert!(
        text.contains("exit=7") || text.contains("exit=6") || text.contains("exit=28"),
        "curl must fail to connect: {text}"
    );
    let (_, out) = common::sh(&b, &closed.id, "cat /proc/net/dev").await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        table.lines().count(),
        3,
        "only a loopback interface: {table}"
    );
    assert!(
        table
            .lines()
            .nth(2)
            .unwrap()
            .trim_start()
            .starts_with("lo:"),
        "{table}"
    );
    b.destroy(&open.id).await.unwrap();
    b.destroy(&closed.id).await.unwrap();
}

#[tokio::test]
async fn live_processes_of_a_none_network_sandbox_have_no_network_either() {
    let (_dir, b) = common::backend();
    if !b.capabilities().enforces.network_none {
        println!("SKIP: this host cannot start commands in a new network namespace");
        return;
    }
    let closed = b
        .create(CreateRequest {
            network: Network::None,
            ..CreateRequest::default()
        })
        .await
        .unwrap();
    let ops = b.process_ops().expect("start_process declared");
    let mut p = ops
        .start_process(
            &closed.id,
            corral_backend::ProcessSpec::new(
                corral_backend::Command::argv(["cat", "/proc/net/dev"]).unwrap(),
            ),
        )
        .await
        .unwrap();
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut p.stdout, &mut out)
        .await
        .unwrap();
    assert_eq!(out.lines().count(), 3, "only a loopback interface: {out}");
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));
    b.destroy(&closed.id).await.unwrap();
}
