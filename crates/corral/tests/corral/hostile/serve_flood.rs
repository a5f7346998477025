//! `corral serve` under a flood of idle connections from loopback peers:
//! it does not spin, it closes idle connections at the head deadline, and
//! an authorised client still gets an answer within seconds.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use corral_backend::{Backend, Labels};
use corral_wire::{RemoteBackend, Token};

use super::{Cli, text};

const TOKEN: &str = "serve-flood-token-0123456789abcdef";
/// The head deadline the server is started with, in seconds.
const HEAD_DEADLINE: u64 = 2;

/// `corral serve --backend memory` on loopback with small caps, its
/// descriptors held to `nofile` by `prlimit` where it exists (so the
/// flood meets `EMFILE` too); returns the child and its address.
fn serve(cli: &Cli, nofile: u32) -> (Child, SocketAddr) {
    let token = cli.state().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let corral = cli.cmd(&[]);
    let mut cmd = if std::path::Path::new("/usr/bin/prlimit").exists() {
        let mut c = std::process::Command::new("/usr/bin/prlimit");
        c.arg(format!("--nofile={nofile}:{nofile}"))
            .arg(corral.get_program());
        c
    } else {
        println!("note: prlimit is missing; the flood does not reach EMFILE");
        std::process::Command::new(corral.get_program())
    };
    let head = HEAD_DEADLINE.to_string();
    cmd.args(["serve", "--backend", "memory", "--listen", "127.0.0.1:0"])
        .args(["--max-connections", "64", "--max-per-peer", "16"])
        .args(["--head-deadline", head.as_str()])
        .arg("--token-file")
        .arg(&token)
        .env("CORRAL_STATE_DIR", cli.state())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn corral serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("serve announced {line:?}"));
    (child, addr)
}

/// CPU time (user + system) process `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// `n` idle connections to `addr` from source address `from`.
async fn idle(from: &str, addr: SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::new();
    for _ in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), socket.connect(addr)).await
        {
            held.push(s);
        }
    }
    held
}

/// Issue item 17: 300 idle connections from one loopback peer and 100 more
/// from ten others (past the per-peer cap, the connection cap and the
/// descriptor limit) leave `corral serve` idle rather than spinning; an
/// idle connection is closed at the head deadline; an authorised client
/// gets its answer within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_idle_connections_neither_spins_nor_locks_out_a_client() {
    let cli = Cli::new();
    let (mut child, addr) = serve(&cli, 48);
    let pid = child.id();

    let mut flood = idle("127.0.0.2", addr, 300).await;
    for peer in 3..13 {
        flood.extend(idle(&format!("127.0.0.{peer}"), addr, 10).await);
    }
    assert!(flood.len() >= 100, "the flood connected ({})", flood.len());

    // Held idle for a second: a loop spinning on EMFILE would burn it all.
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spent = cpu_ticks(pid) - before;
    assert!(spent < 40, "serve spent {spent} ticks of one second idle");

    // An authorised client, while the flood still holds its connections.
    let started = Instant::now();
    let asked = async {
        let remote =
            RemoteBackend::connect(&format!("http://{addr}"), Token::new(TOKEN).unwrap()).await?;
        remote.list(&Labels::new()).await
    };
    let listed = tokio::time::timeout(Duration::from_secs(30), asked)
        .await
        .expect("the authorised request answers");
    assert!(listed.unwrap().is_empty());
    let waited = started.elapsed();
    println!(
        "flood of {}: {spent} ticks idle, answered after {waited:?}",
        flood.len()
    );
    // The flood ahead of it in the backlog is served a cap at a time, each
    // connection for at most the head deadline: seconds, not forever.
    assert!(
        waited < Duration::from_secs(20),
        "answered after {waited:?}"
    );

    // The first connection of the flood was served and then closed by the
    // server at the head deadline: it reads end-of-stream, not a hang.
    let first = flood.remove(0).into_std().unwrap();
    first.set_nonblocking(false).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(HEAD_DEADLINE + 10)))
        .unwrap();
    let mut buf = [0u8; 64];
    let ended = matches!((&first).read(&mut buf), Ok(0))
        || matches!((&first).read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset);
    assert!(ended, "an idle connection is closed by the server");

    drop(flood);
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}
