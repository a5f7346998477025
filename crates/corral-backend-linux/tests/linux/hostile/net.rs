//! The allowlist fails fast and alike: attack → expected refusal.

use std::time::{Duration, Instant};

use corral_backend::{Backend, CreateRequest, Destination, ErrorCode, Network};
use corral_testkit::testhost::TestHost;

use crate::hostile::Host;

/// The longest a refused connection may take (a dropped one waits for
/// curl's `-m 10`).
const FAST: Duration = Duration::from_secs(2);

fn allowlist(destinations: &[(String, u16)]) -> CreateRequest {
    CreateRequest {
        network: Network::Allowlist {
            destinations: destinations
                .iter()
                .map(|(host, port)| Destination::new(host, *port).unwrap())
                .collect(),
        },
        ..CreateRequest::default()
    }
}

/// issue 12 item 13: under an allowlist, a TCP connection to a destination
/// not on it fails within 2 s with `ECONNREFUSED` (a TCP reset), not after
/// TCP's timeout — even where a server would answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_connection_is_refused_at_once() {
    let test = "a_denied_connection_is_refused_at_once";
    let Some(h) = Host::new(test).await else {
        return;
    };
    if let Err(reason) = corral_backend_linux::network::available() {
        println!("SKIP {test}: {reason}");
        return;
    }
    if !std::path::Path::new("/usr/bin/curl").exists() {
        println!("SKIP {test}: curl is not installed in /usr/bin (the host image's)");
        return;
    }
    let (mut a, mut b) = (TestHost::new().unwrap(), TestHost::new().unwrap());
    a.serve(8080, "allowed").unwrap();
    a.serve(8081, "same-host-other-port").unwrap();
    b.serve(8080, "other-host").unwrap();
    let id = h.sandbox(allowlist(&[(a.addr().to_string(), 8080)])).await;
    let curl =
        |addr: std::net::Ipv4Addr, port: u16| format!("curl -sSv -m 10 http://{addr}:{port}/");
    let (code, out, err) = h.sh(&id, &curl(a.addr(), 8080)).await;
    assert_eq!(
        (code, out.as_str()),
        (0, "allowed"),
        "the allowed one: {err}"
    );
    // attack: connect where the allowlist does not lead → refused, fast.
    let rows = [
        ("same host, other port", a.addr(), 8081),
        ("other host, same port", b.addr(), 8080),
        (
            "an address nobody has",
            std::net::Ipv4Addr::new(10, 231, 255, 254),
            80,
        ),
    ];
    for (what, addr, port) in rows {
        let started = Instant::now();
        let (code, out, err) = h.sh(&id, &curl(addr, port)).await;
        let took = started.elapsed();
        assert_eq!(
            code, 7,
            "{what}: curl's 'failed to connect', got {code}: {out}{err}"
        );
        assert!(
            err.contains("Connection refused"),
            "{what}: ECONNREFUSED: {err}"
        );
        assert!(
            took < FAST,
            "{what}: refused in {took:?}, not within {FAST:?}"
        );
    }
    h.still_answers().await;
}

/// issue 12 item 13: an allowlist destination with port 0 is refused with
/// `invalid_input`, in one line naming it, and nothing is made: it cannot
/// even be made into a request (refused where the destination is made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_with_port_zero_is_refused() {
    let test = "a_destination_with_port_zero_is_refused";
    let Some(h) = Host::new(test).await else {
        return;
    };
    let before = h.backend.list(&Default::default()).await.unwrap().len();
    for host in ["10.0.0.1", "10.0.0.0/8", "localhost"] {
        let err = corral_backend::BackendError::from(Destination::new(host, 0).unwrap_err());
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{host}: {err}");
        let text = err.to_string();
        assert!(text.contains(&format!("{host}:0")), "{host}: {text}");
        assert!(!text.contains('\n'), "{host}: one line: {text}");
    }
    let after = h.backend.list(&Default::default()).await.unwrap().len();
    assert_eq!(before, after, "nothing was created");
    h.still_answers().await;
}
