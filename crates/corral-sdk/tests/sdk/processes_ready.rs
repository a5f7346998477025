//! Readiness checks — a log line, an HTTP status, a listening port — each
//! passing and failing, on memory, local and (where this host can run it)
//! linux. A failure is a one-line error with the process's last log lines.

use crate::processes_support;
use crate::sandbox_support;
use std::time::Duration;

use corral_sdk::processes::{ReadyCheck, StartOptions};
use corral_sdk::{Command, ErrorCode};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(600);

/// A port nothing listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

// SDK spec, "Rules an adapter must follow": "Keep policy out. Redaction, edit,
// git, process records, and readiness belong to the core" — readiness is polled
// by the core over exec and file reads.
#[tokio::test]
async fn log_line_readiness_passes_times_out_and_sees_early_exits() {
    for target in sandbox_support::all("log_line_readiness") {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        let cmd = Command::shell(
            "echo booting; echo warming up >&2; sleep 0.2; echo 'listening on 8080'; sleep 60",
        )
        .unwrap();
        let h = procs.start("srv", cmd).await.unwrap();
        h.wait_ready(&ReadyCheck::LogLine(r"listening on \d+".into()), LONG)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        // A line that never comes: `timeout`, quoting the last lines.
        let e = h
            .wait_ready(&ReadyCheck::LogLine("never printed".into()), SHORT)
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.operation.as_str()),
            (ErrorCode::Timeout, "processes.ready"),
            "{p}: {e}"
        );
        assert!(
            e.message.contains("booting | listening on 8080"),
            "{p}: {e}"
        );
        assert!(e.message.contains("stderr: warming up"), "{p}: {e}");
        assert!(!e.to_string().contains('\n'));
        // A process that ends first fails at once with `conflict`.
        procs
            .start(
                "dies",
                Command::shell("echo 'fatal: no config' >&2; exit 2").unwrap(),
            )
            .await
            .unwrap();
        let e = procs
            .wait_ready("dies", &ReadyCheck::LogLine("ready".into()), LONG)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Conflict, "{p}: {e}");
        assert!(e.message.contains("exited (2)"), "{p}: {e}");
        assert!(e.message.contains("fatal: no config"), "{p}: {e}");
        // As a start option: the process is killed when it never gets ready.
        let opts = StartOptions {
            ready: Some(ReadyCheck::LogLine("up".into())),
            ready_timeout: Some(SHORT),
            ..StartOptions::default()
        };
        let e = procs
            .start_with(
                "slow",
                Command::shell("echo still loading; sleep 60").unwrap(),
                opts.clone(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.operation.as_str()),
            (ErrorCode::Timeout, "processes.start"),
            "{p}: {e}"
        );
        assert!(e.message.contains("still loading"), "{p}: {e}");
        assert!(
            !procs.status("slow").await.unwrap().state.is_running(),
            "{p}"
        );
        procs
            .start_with("quick", Command::shell("echo up; sleep 60").unwrap(), opts)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        let bad = procs
            .wait_ready("quick", &ReadyCheck::LogLine("(".into()), SHORT)
            .await
            .unwrap_err();
        assert_eq!(bad.code, ErrorCode::InvalidInput, "{bad}");
        processes_support::cleanup(&sb).await;
    }
}

// A process that printed its ready line and then ended was ready before it
// ended: the check looks once more after it sees the end, so this holds
// however the polls fall.
#[tokio::test]
async fn a_ready_line_before_a_quick_exit_counts() {
    for target in [sandbox_support::memory(), sandbox_support::local()] {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        for i in 0..5 {
            let name = format!("quick{i}");
            let h = procs
                .start(&name, Command::shell("echo ready; exit 0").unwrap())
                .await
                .unwrap();
            h.wait_ready(&ReadyCheck::LogLine("^ready$".into()), LONG)
                .await
                .unwrap_or_else(|e| panic!("{p}: {e}"));
        }
        processes_support::cleanup(&sb).await;
    }
}

#[tokio::test]
async fn memory_http_is_simulated_and_ports_are_unsupported() {
    let target = sandbox_support::memory();
    let sb = processes_support::sandbox(&target).await;
    let procs = sb.processes();
    procs
        .start("app", Command::shell("echo serving; sleep 60").unwrap())
        .await
        .unwrap();
    let ok = ReadyCheck::Http {
        port: 8080,
        path: "/health".into(),
        status: 200,
    };
    procs.wait_ready("app", &ok, LONG).await.unwrap();
    let wrong = ReadyCheck::Http {
        port: 8080,
        path: "/health".into(),
        status: 204,
    };
    let e = procs.wait_ready("app", &wrong, SHORT).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::Timeout, "{e}");
    assert!(e.message.contains("last status 200"), "{e}");
    assert!(e.message.contains("stdout: serving"), "{e}");
    let e = procs
        .wait_ready("app", &ReadyCheck::Port(8080), SHORT)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Unsupported, "{e}");
    let e = procs
        .wait_ready(
            "app",
            &ReadyCheck::Http {
                port: 1,
                path: "no-slash".into(),
                status: 200,
            },
            SHORT,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e}");
    processes_support::cleanup(&sb).await;
}

#[tokio::test]
async fn port_and_http_readiness_against_a_real_server() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!(
            "skip: port_and_http_readiness_against_a_real_server: no /usr/bin/python3 to serve HTTP"
        );
        return;
    }
    let mut targets = vec![sandbox_support::local()];
    targets.extend(sandbox_support::linux("port_and_http_readiness"));
    for target in targets {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();
        if !sb.run("command -v curl").await.unwrap().success() {
            eprintln!("skip: port_and_http_readiness on {p}: no curl in the sandbox");
            processes_support::cleanup(&sb).await;
            continue;
        }
        let port = free_port();
        let cmd = Command::argv([
            "python3",
            "-u",
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .unwrap();
        let opts = StartOptions {
            ready: Some(ReadyCheck::Port(port)),
            ready_timeout: Some(LONG),
            ..StartOptions::default()
        };
        let h = procs
            .start_with("web", cmd, opts)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        let ok = ReadyCheck::Http {
            port,
            path: "/".into(),
            status: 200,
        };
        h.wait_ready(&ok, LONG)
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        let missing = ReadyCheck::Http {
            port,
            path: "/missing".into(),
            status: 200,
        };
        let e = h.wait_ready(&missing, SHORT).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout, "{p}: {e}");
        assert!(e.message.contains("last status 404"), "{p}: {e}");
        assert!(
            e.message.contains("GET /missing"),
            "{p}: the server's log: {e}"
        );
        // Nothing listens on another free port.
        let other = free_port();
        let e = h
            .wait_ready(&ReadyCheck::Port(other), SHORT)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout, "{p}: {e}");
        assert!(e.message.contains(&format!("port {other}")), "{p}: {e}");
        let e = h
            .wait_ready(
                &ReadyCheck::Http {
                    port: other,
                    path: "/".into(),
                    status: 200,
                },
                SHORT,
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("no answer"), "{p}: {e}");
        h.kill().await.unwrap();
        processes_support::cleanup(&sb).await;
    }
}
