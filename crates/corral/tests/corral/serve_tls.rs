//! `corral serve` over TLS, through the real binary hosting the memory
//! backend with a test PKI's certificate (or a self-signed one): a client
//! that trusts the CA (`CORRAL_CA_FILE`, or a `Trust` in process) is
//! served the wire, the backend routes and `conformance --provider
//! https://…`; one that does not is refused in one line naming the
//! certificate problem; hostile clients of the TLS port (plain HTTP, no
//! hello, half a hello, bytes that are not TLS) are cut without holding a
//! place; and the flags' refusals, one row each, with plain HTTP off
//! loopback served only when asked, with a warning.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use corral_contract::SandboxProvider;
use corral_runtime::runtime::Runtime;
use corral_testkit::tls::TestPki;
use corral_wire::{HandshakeError, Token, Trust, WireError, WireProvider};

use crate::serve::request;
use crate::serve_support::Served;

const TOKEN: &str = "serve-tls-test-token-0123456789abcdef";

/// A token file and a test PKI in a fresh directory.
struct Setup {
    dir: tempfile::TempDir,
    token_file: std::path::PathBuf,
    pki: TestPki,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let pki = TestPki::create(dir.path()).unwrap();
    Setup {
        dir,
        token_file,
        pki,
    }
}

impl Setup {
    /// `corral serve` on `127.0.0.1:0` over TLS with the test certificate,
    /// and `extra` flags.
    fn serve_tls(&self, extra: &[&str]) -> Served {
        self.serve_tls_on("127.0.0.1:0", extra)
    }

    /// `corral serve` on `listen` over TLS with the test certificate, and
    /// `extra` flags.
    fn serve_tls_on(&self, listen: &str, extra: &[&str]) -> Served {
        let mut args = vec!["--listen", listen];
        args.extend_from_slice(extra);
        let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        args.extend([
            "--tls-cert".into(),
            self.pki.cert.clone().into(),
            "--tls-key".into(),
            self.pki.key.clone().into(),
        ]);
        Served::memory_with(&self.token_file, &args)
    }

    /// `corral ARGS…` with the token file in the environment and, when
    /// given, the CA file.
    fn corral(&self, args: &[&str], ca: Option<&Path>) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
        command
            .args(args)
            .env("CORRAL_TOKEN_FILE", &self.token_file)
            .env_remove("CORRAL_CA_FILE");
        if let Some(ca) = ca {
            command.env("CORRAL_CA_FILE", ca);
        }
        command.output().unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

/// The server's address, `127.0.0.1:PORT`, from its endpoint.
fn addr(endpoint: &str) -> &str {
    endpoint
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(endpoint)
}

/// Everything the server sends on `stream` until it closes it (bounded:
/// a server that keeps it open fails the test instead of hanging it).
fn until_closed(mut stream: TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return seen,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return seen,
            Err(e) => panic!("the server kept the connection open: {e}"),
        }
    }
}

/// A wire call through a client that trusts the test CA: the envelope on
/// connect, then a provisioning through the runtime.
async fn provision_through(endpoint: &str, ca: &Path) {
    let trust = Trust::system_and(Some(ca)).unwrap();
    let provider = WireProvider::connect_trusting(endpoint, token(), trust)
        .await
        .unwrap();
    let runtime = Runtime::new(provider).unwrap();
    runtime
        .provision(request(runtime.capabilities()))
        .await
        .unwrap();
}

#[test]
fn a_client_trusting_the_ca_is_served_over_tls_and_one_that_does_not_is_refused_naming_why() {
    let s = setup();
    let served = s.serve_tls(&[]);
    assert!(
        served.endpoint.starts_with("https://127.0.0.1:"),
        "the ready line says https: {}",
        served.endpoint
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(provision_through(&served.endpoint, &s.pki.ca));

    // The backend routes, through the command line's remote backend with
    // the CA file in CORRAL_CA_FILE.
    let backend = format!("remote+{}", served.endpoint);
    let run = s.corral(
        &["run", "--backend", &backend, "--", "echo", "over tls"],
        Some(&s.pki.ca),
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert_eq!(text(&run.stdout), "over tls\n");

    // Without the CA: one line naming the certificate problem.
    let refused = s.corral(&["ls", "--backend", &backend], None);
    assert_ne!(refused.status.code(), Some(0));
    let err = text(&refused.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("certificate is refused"), "{err}");
    assert!(err.contains("CORRAL_CA_FILE"), "{err}");
    let wrong = rt.block_on(WireProvider::connect_trusting(
        &served.endpoint,
        token(),
        Trust::system_and(None).unwrap(),
    ));
    match wrong {
        Err(
            e @ WireError::Tls {
                error: HandshakeError::UnknownIssuer,
                ..
            },
        ) => {
            let line = e.to_string();
            assert_eq!(line.lines().count(), 1, "{line}");
            assert!(line.contains("no trusted CA issued it"), "{line}");
        }
        other => panic!("an untrusted certificate: {other:?}"),
    }
    // An address the certificate does not name is refused as well.
    let elsewhere = s.serve_tls_on("127.0.0.2:0", &[]);
    let misnamed = s.corral(
        &["ls", "--backend", &format!("remote+{}", elsewhere.endpoint)],
        Some(&s.pki.ca),
    );
    assert_ne!(misnamed.status.code(), Some(0));
    let err = text(&misnamed.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not valid for name \"127.0.0.2\""), "{err}");
}

/// A self-signed certificate (no CA behind it) is trusted by naming the
/// certificate itself in `CORRAL_CA_FILE`.
#[test]
fn a_self_signed_certificate_is_trusted_through_the_ca_file() {
    let s = setup();
    let args: Vec<std::ffi::OsString> = vec![
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--tls-cert".into(),
        s.pki.self_signed.clone().into(),
        "--tls-key".into(),
        s.pki.self_signed_key.clone().into(),
    ];
    let served = Served::memory_with(&s.token_file, &args);
    let backend = format!("remote+{}", served.endpoint);
    let ls = s.corral(&["ls", "--backend", &backend], Some(&s.pki.self_signed));
    assert_eq!(ls.status.code(), Some(0), "{}", text(&ls.stderr));
    let refused = s.corral(&["ls", "--backend", &backend], Some(&s.pki.ca));
    let err = text(&refused.stderr);
    assert_ne!(refused.status.code(), Some(0));
    assert!(err.contains("no trusted CA issued it"), "{err}");
}

#[test]
fn conformance_runs_against_a_provider_over_tls() {
    let s = setup();
    let served = s.serve_tls(&[]);
    let token_file = s.token_file.to_str().unwrap();
    let run = s.corral(
        &[
            "conformance",
            "--provider",
            &served.endpoint,
            "--token-file",
            token_file,
            "--egress-allowed",
            "api.example.com:443",
            "--egress-denied",
            "blocked.example.net:443",
        ],
        Some(&s.pki.ca),
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let untrusted = s.corral(
        &[
            "conformance",
            "--provider",
            &served.endpoint,
            "--token-file",
            token_file,
        ],
        None,
    );
    let err = text(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("corral: error: [tls] ") && err.contains("certificate is refused"),
        "{err}"
    );
}

/// Hostile clients of the TLS port, one row each → what they get: never
/// an HTTP answer; a failed handshake is closed at once, a stalled one
/// when the head deadline passes; and none keeps its place. With one
/// connection allowed, a trusted client that queues behind each of them
/// is served, and so is one after them.
#[test]
fn hostile_clients_of_the_tls_port_are_cut_and_hold_no_place() {
    let s = setup();
    let served = s.serve_tls(&["--max-connections", "1", "--head-deadline", "1"]);
    let at = addr(&served.endpoint).to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // (attack, what it sends and then holds open, whether the server says
    // nothing at all before it closes)
    let table: &[(&str, &[u8], bool)] = &[
        (
            "plain HTTP to the TLS port",
            b"GET /v1/capabilities HTTP/1.1\r\nHost: corral\r\n\r\n",
            false,
        ),
        ("opens TCP and never sends a ClientHello", b"", true),
        (
            "half a ClientHello, then silence",
            &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc],
            true,
        ),
        (
            "bytes that are not TLS",
            &[0x00, 0xff, 0x13, 0x37, 0x00, 0x00, 0xde, 0xad],
            false,
        ),
    ];
    for (attack, bytes, silent) in table {
        let mut hostile = TcpStream::connect(&at).unwrap();
        hostile.write_all(bytes).unwrap();
        // Queued behind the hostile client (the only place is its):
        // served once the server lets it go.
        rt.block_on(provision_through(&served.endpoint, &s.pki.ca));
        let answer = until_closed(hostile);
        assert!(
            !answer.windows(5).any(|w| w == b"HTTP/"),
            "{attack}: no HTTP answer: {:?}",
            String::from_utf8_lossy(&answer)
        );
        if *silent {
            assert!(answer.is_empty(), "{attack}: cut without a word");
        }
    }
    rt.block_on(provision_through(&served.endpoint, &s.pki.ca));
}

/// Mistake or attack → the one line `corral serve` refuses it with (exit
/// 2), before anything listens.
#[test]
fn serve_refuses_bad_tls_flags_and_plain_http_off_loopback_in_one_line() {
    let s = setup();
    let dir = s.dir.path();
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not PEM\n").unwrap();
    let missing = dir.join("missing.pem");
    let p = |path: &Path| path.to_str().unwrap().to_string();
    let (cert, key, other) = (p(&s.pki.cert), p(&s.pki.key), p(&s.pki.other_key));
    let (garbage, missing) = (p(&garbage), p(&missing));
    let lo = "127.0.0.1:0";
    let table: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "a certificate without a key",
            vec!["--listen", lo, "--tls-cert", &cert],
            "--tls-cert needs --tls-key".into(),
        ),
        (
            "a key without a certificate",
            vec!["--listen", lo, "--tls-key", &key],
            "--tls-key needs --tls-cert".into(),
        ),
        (
            "a certificate file that is not there",
            vec!["--listen", lo, "--tls-cert", &missing, "--tls-key", &key],
            format!("certificate file {missing}: cannot be read"),
        ),
        (
            "a key file that is not there",
            vec!["--listen", lo, "--tls-cert", &cert, "--tls-key", &missing],
            format!("key file {missing}: cannot be read"),
        ),
        (
            "garbage as the certificate",
            vec!["--listen", lo, "--tls-cert", &garbage, "--tls-key", &key],
            format!("certificate file {garbage}: no -----BEGIN CERTIFICATE-----"),
        ),
        (
            "garbage as the key",
            vec!["--listen", lo, "--tls-cert", &cert, "--tls-key", &garbage],
            format!("key file {garbage}: no -----BEGIN PRIVATE KEY-----"),
        ),
        (
            "a key that is not the certificate's",
            vec!["--listen", lo, "--tls-cert", &cert, "--tls-key", &other],
            format!("key file {other} does not match certificate file {cert}"),
        ),
        (
            "TLS and plain HTTP at once",
            vec![
                "--listen",
                lo,
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--insecure-plain-http",
            ],
            "--insecure-plain-http contradicts --tls-cert".into(),
        ),
        (
            "every IPv4 interface without TLS",
            vec!["--listen", "0.0.0.0:0"],
            "--listen 0.0.0.0:0 is not a loopback address".into(),
        ),
        (
            "every IPv6 interface without TLS",
            vec!["--listen", "[::]:0"],
            "--listen [::]:0 is not a loopback address".into(),
        ),
        (
            "another host's address without TLS",
            vec!["--listen", "192.0.2.1:7070"],
            "give --tls-cert FILE --tls-key FILE, or --insecure-plain-http".into(),
        ),
    ];
    for (case, args, expected) in table {
        let out = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--backend", "memory"])
            .args(&args)
            .arg("--token-file")
            .arg(&s.token_file)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{case}: {err}");
        assert_eq!(err.lines().count(), 1, "{case}: {err}");
        assert!(err.contains(&expected), "{case}: {err}");
        assert!(out.stdout.is_empty(), "{case}: nothing listened");
    }
}

/// With `--insecure-plain-http`, an address other hosts reach is served in
/// plain HTTP, after a one-line warning on stderr.
#[test]
fn plain_http_off_loopback_is_served_when_asked_with_a_warning() {
    let s = setup();
    let mut served = Served::memory_with(
        &s.token_file,
        &["--listen", "0.0.0.0:0", "--insecure-plain-http"],
    );
    let mut warning = String::new();
    served
        .stderr
        .as_mut()
        .unwrap()
        .read_line(&mut warning)
        .unwrap();
    assert!(
        warning.starts_with("corral: warning: serving plain HTTP on 0.0.0.0:0"),
        "{warning}"
    );
    assert!(warning.contains("in clear"), "{warning}");
    let port = served
        .endpoint
        .strip_prefix("http://0.0.0.0:")
        .unwrap_or_else(|| panic!("plain, on every interface: {}", served.endpoint));
    let endpoint = format!("http://127.0.0.1:{port}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let provider = WireProvider::connect(&endpoint, token()).await.unwrap();
        let runtime = Runtime::new(provider).unwrap();
        runtime
            .provision(request(runtime.capabilities()))
            .await
            .unwrap();
    });
}
