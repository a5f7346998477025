//! Token authentication for git: the token reaches the server through a
//! pipe to git's credential helper, never through any process's argv or
//! environment, and is redacted from the error; no credential file is
//! ever written.
//!
//! The server is a loopback HTTP server this test runs: it asks for Basic
//! auth, records what it was sent, scans every process's command line and
//! environment for the token while git waits for its answer, and refuses.

use crate::sp;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use corral_backend_local::LocalBackend;
use corral_sdk::git::{CloneOptions, GitAuth, PullOptions};
use corral_sdk::{CreateOptions, ErrorCode, Sandbox};

const TOKEN: &str = "tok-3f9a1c-corral-secret";

#[derive(Default)]
struct Seen {
    credentials: Vec<String>,
    leaks: Vec<String>,
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Processes whose command line or environment holds the token.
fn processes_holding(token: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == std::process::id().to_string() {
            continue;
        }
        for what in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(entry.path().join(what))
                && String::from_utf8_lossy(&bytes).contains(token)
            {
                hits.push(format!("/proc/{name}/{what}"));
            }
        }
    }
    hits
}

/// Serves 401 to every request on a loopback port, recording credentials.
fn serve(listener: TcpListener, seen: Arc<Mutex<Seen>>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut auth = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line
                .strip_prefix("Authorization: Basic ")
                .or_else(|| line.strip_prefix("authorization: Basic "))
            {
                auth = Some(String::from_utf8_lossy(&decode_base64(v.trim())).into_owned());
            }
        }
        if let Some(cred) = auth {
            // git is waiting for this answer now: nothing may hold the token.
            let leaks = processes_holding(TOKEN);
            let mut s = seen.lock().unwrap();
            s.credentials.push(cred);
            s.leaks.extend(leaks);
        }
        let _ = stream.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"corral-test\"\r\n\
              Content-Length: 0\r\nConnection: close\r\n\r\n",
        );
    }
}

// Git token rule: the token never appears in argv, the process table, logs
// or errors. And "Keep policy out": git (with its credentials) is a core
// feature, built on exec and the file primitives.
#[tokio::test]
async fn token_goes_through_a_pipe_and_never_leaks() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skip: token_goes_through_a_pipe_and_never_leaks: git is not installed");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server_seen = seen.clone();
    std::thread::spawn(move || serve(listener, server_seen));

    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/team/repo.git");
    let options = CloneOptions {
        auth: Some(GitAuth::token(TOKEN).with_username("robot")),
        ..CloneOptions::default()
    };
    let err = sb
        .git()
        .clone(&url, "/workspace/repo", options)
        .await
        .unwrap_err();

    assert_eq!(err.code, ErrorCode::Auth, "{err}");
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains(TOKEN),
        "the token leaked into the error: {shown}"
    );
    let (credentials, leaks) = {
        let s = seen.lock().unwrap();
        (s.credentials.clone(), s.leaks.clone())
    };
    assert!(
        credentials.contains(&format!("robot:{TOKEN}")),
        "the server never got the token through the helper: {:?}",
        credentials.len()
    );
    assert!(leaks.is_empty(), "token visible in {leaks:?}");

    // No credential file was made.
    let left = sb
        .backend()
        .files()
        .list(sb.id(), &sp("/.corral/git"))
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "credential files: {left:?}");

    // The token is now a secret of the sandbox: redacted from tool answers.
    let answer = corral_sdk::tools::dispatch(
        &sb,
        "run",
        serde_json::json!({ "command": format!("echo {TOKEN}") }),
    )
    .await;
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(!answer.to_string().contains(TOKEN), "{answer}");
    assert!(
        answer["stdout"].as_str().unwrap().contains("[REDACTED]"),
        "{answer}"
    );

    // Bad tokens are refused before anything runs, without echoing them.
    let e = sb
        .git()
        .pull(
            "/workspace",
            PullOptions {
                auth: Some(GitAuth::token("line\nbreak-secret")),
                ..PullOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    assert!(!e.message.contains("break-secret"), "{e}");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn a_password_in_the_url_is_redacted_from_errors() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skip: a_password_in_the_url_is_redacted_from_errors: git is not installed");
        return;
    }
    // A loopback port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    let url = format!("http://robot:pw-in-url-7731@127.0.0.1:{port}/r.git");
    let err = sb
        .git()
        .clone(&url, "/workspace/r", CloneOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable, "{err}");
    assert!(!err.to_string().contains("pw-in-url-7731"), "{err}");
    sb.destroy().await.unwrap();
}

#[tokio::test]
async fn a_dropped_call_leaves_no_credentials() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skip: a_dropped_call_leaves_no_credentials: git is not installed");
        return;
    }
    // Asks for credentials, then never answers the request that carries them.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (asked, got_credentials) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut has_auth = false;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                has_auth |= line.to_ascii_lowercase().starts_with("authorization:");
            }
            if has_auth {
                let _ = asked.send(());
                held.push(stream);
            } else {
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"t\"\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let sb = Sandbox::create(backend, CreateOptions::default())
        .await
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/r.git");
    let options = CloneOptions {
        auth: Some(GitAuth::token("dropped-call-token")),
        ..CloneOptions::default()
    };
    let git = sb.git();
    let mut clone = Box::pin(git.clone(&url, "/workspace/r", options));
    let waited = tokio::task::spawn_blocking(move || {
        got_credentials.recv_timeout(std::time::Duration::from_secs(120))
    });
    tokio::select! {
        ended = &mut clone => panic!("the clone ended before the server answered: {ended:?}"),
        got = waited => got.unwrap().expect("the server never got credentials"),
    }
    let files = sb.backend().files();
    // issue 12 item 9: while git holds the token, it is in no file.
    let during = files
        .list(sb.id(), &sp("/.corral/git"))
        .await
        .unwrap_or_default();
    assert!(
        during.is_empty(),
        "a credential file while git runs: {during:?}"
    );
    drop(clone);
    let left = files
        .list(sb.id(), &sp("/.corral/git"))
        .await
        .unwrap_or_default();
    assert!(left.is_empty(), "credential files left: {left:?}");
    sb.destroy().await.unwrap();
}
