//! Preview URLs: a port declared at create is reachable from the host's
//! loopback through `preview_url`, from any process on the same state
//! directory, until the sandbox goes; it gives a `network: none` sandbox no
//! way out.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest, ProcessSpec,
    SandboxInfo,
};
use corral_backend_linux::LinuxBackend;

use crate::common;
use common::{StateDir, backend, run};

/// The host port of a preview URL `http://127.0.0.1:PORT/`.
fn host_port(url: &str) -> u16 {
    url.strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix('/'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback preview URL: {url}"))
}

/// One HTTP/1.0 GET of `path` on the host's `127.0.0.1:port`: the whole
/// response, or `None` when the connection failed or said nothing.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: preview\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = Vec::new();
    s.read_to_end(&mut text).ok()?;
    (!text.is_empty()).then(|| String::from_utf8_lossy(&text).into_owned())
}

/// GETs `path` until the server inside answers (it takes a moment to
/// start), for at most ~30 s.
async fn get_when_up(port: u16, path: &'static str) -> Option<String> {
    for _ in 0..150 {
        let r = tokio::task::spawn_blocking(move || get(port, path))
            .await
            .unwrap();
        if r.is_some() {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

fn spec(cmd: Command) -> ProcessSpec {
    ProcessSpec::new(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_port_answers_through_its_url_until_destroy() {
    let test = "a_declared_port_answers_through_its_url_until_destroy";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    assert!(b.capabilities().previews, "previews are declared");
    let req = CreateRequest {
        ports: vec![8000, 8001],
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let id = info.id.clone();
    if run(&b, &id, "command -v python3").await.0 != 0 {
        eprintln!("skip: {test}: no python3 in the host image to serve HTTP");
        return;
    }
    assert_eq!(
        run(&b, &id, "printf hello-preview > /workspace/hello.txt")
            .await
            .0,
        0
    );
    let server = b
        .process_ops()
        .unwrap()
        .start_process(
            &id,
            spec(
                Command::argv([
                    "python3",
                    "-m",
                    "http.server",
                    "8000",
                    "--bind",
                    "127.0.0.1",
                    "--directory",
                    "/workspace",
                ])
                .unwrap(),
            ),
        )
        .await
        .unwrap();

    let url = b.preview_url(&id, 8000).await.unwrap();
    let port = host_port(&url.url);
    assert!(url.headers.is_empty());
    let native = b.native(&id).await.unwrap();
    assert_eq!(native["previews"]["8000"].as_u64(), Some(u64::from(port)));
    let answer = get_when_up(port, "/hello.txt")
        .await
        .expect("the server inside answers through the preview URL");
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer:.200}");
    assert!(answer.ends_with("hello-preview"), "{answer:.400}");

    // Another process on the same state directory gives the same URL.
    let other = LinuxBackend::open(dir.path()).unwrap();
    assert_eq!(other.connect(&id).await.unwrap().id, id);
    assert_eq!(other.preview_url(&id, 8000).await.unwrap(), url);

    // A declared port nobody serves: the connection is closed, no answer.
    let idle = host_port(&b.preview_url(&id, 8001).await.unwrap().url);
    assert_ne!(idle, port);
    let idle_answer = tokio::task::spawn_blocking(move || get(idle, "/"))
        .await
        .unwrap();
    assert_eq!(idle_answer, None, "nothing serves port 8001 inside");

    let undeclared = b.preview_url(&id, 9999).await.unwrap_err();
    assert_eq!(undeclared.code(), ErrorCode::NotFound, "{undeclared}");
    assert!(
        undeclared.message().contains("9999") && undeclared.message().contains("8000, 8001"),
        "{undeclared}"
    );
    let unknown = b.preview_url("lnx-0000000000000000", 8000).await;
    assert_eq!(unknown.unwrap_err().code(), ErrorCode::NotFound);

    drop(server);
    b.destroy(&id).await.unwrap();
    for p in [port, idle] {
        let after = TcpStream::connect(("127.0.0.1", p));
        assert!(
            after.is_err(),
            "host port {p} still accepts after destroy: {after:?}"
        );
    }
    assert_eq!(
        b.preview_url(&id, 8000).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_none_sandbox_with_a_preview_still_cannot_reach_out() {
    let test = "a_none_sandbox_with_a_preview_still_cannot_reach_out";
    let Some((b, _dir)) = backend(test) else {
        return;
    };
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let host_listener_port = host.local_addr().unwrap().port();
    let req = CreateRequest {
        ports: vec![8000],
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let forwarded = host_port(&b.preview_url(&info.id, 8000).await.unwrap().url);
    // Only loopback inside: no link, hence no route anywhere.
    let (_, links, _) = run(
        &b,
        &info.id,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
    )
    .await;
    assert_eq!(links.trim(), "lo", "the preview added no link");
    // Neither the host's server nor the forwarder's own host port is
    // reachable from inside (the sandbox's 127.0.0.1 is its own); the
    // probe itself works (a listener inside is reached).
    if run(&b, &info.id, "command -v python3").await.0 != 0 {
        eprintln!("skip: {test}: no python3 in the host image to probe with");
        return;
    }
    let probe = format!(
        "import socket\n\
         own = socket.socket(); own.bind(('127.0.0.1', 0)); own.listen(1)\n\
         for p in (own.getsockname()[1], {host_listener_port}, {forwarded}):\n\
         \x20   try:\n\
         \x20       socket.create_connection(('127.0.0.1', p), 3); print(p, 'connected')\n\
         \x20   except OSError as e:\n\
         \x20       print(p, 'refused', e.errno)\n"
    );
    let mut out = CollectedOutput::default();
    b.exec(
        &info.id,
        ExecRequest::new(Command::argv(["python3", "-c", &probe]).unwrap())
            .timeout(Duration::from_secs(30)),
        &mut out,
    )
    .await
    .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].ends_with("connected"), "the probe works: {out}");
    for line in &lines[1..] {
        assert!(
            line.contains("refused"),
            "reached the host from inside: {out}"
        );
    }
    assert!(
        matches!(host.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the host's server saw a connection from the sandbox"
    );
    b.destroy(&info.id).await.unwrap();
}

/// A sandbox declaring port 8000, the host port of its preview and the
/// forwarder pid its preview record names.
async fn previewed(b: &LinuxBackend, dir: &StateDir) -> (SandboxInfo, u16, u64) {
    let req = CreateRequest {
        ports: vec![8000],
        ..CreateRequest::default()
    };
    let info = b.create(req).await.unwrap();
    let port = host_port(&b.preview_url(&info.id, 8000).await.unwrap().url);
    let record = dir
        .path()
        .join("linux/sandboxes")
        .join(&info.id)
        .join("preview.json");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let forwarder = record["forwarder"][0].as_u64().unwrap();
    (info, port, forwarder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forwarder_ends_with_its_sandbox_init_and_gc_leaves_no_port() {
    let test = "the_forwarder_ends_with_its_sandbox_init_and_gc_leaves_no_port";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let (info, port, forwarder) = previewed(&b, &dir).await;
    let forwarder = forwarder as i32;
    let init_pid = b.native(&info.id).await.unwrap()["init_pid"]
        .as_u64()
        .unwrap() as i32;
    // A crash: PID 1 dies without any destroy.
    let pid = rustix::process::Pid::from_raw(init_pid).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let mut gone = false;
    for _ in 0..200 {
        let stat = std::fs::read_to_string(format!("/proc/{forwarder}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        gone,
        "the forwarder {forwarder} outlived its sandbox's PID 1"
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the host port outlived the sandbox"
    );
    let report = b.gc().await.unwrap();
    assert!(report.sandboxes.contains(&info.id), "{report:?}");
    assert!(report.errors.is_empty(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_leaves_no_forwarder_of_a_half_made_sandbox() {
    let test = "gc_leaves_no_forwarder_of_a_half_made_sandbox";
    let Some((b, dir)) = backend(test) else {
        return;
    };
    let (info, port, forwarder) = previewed(&b, &dir).await;
    let sandbox = dir.path().join("linux/sandboxes").join(&info.id);
    // What a creator killed before its records were written leaves: no
    // sandbox record, no creator, no preview record — only the processes.
    for f in ["meta.json", "creator", "preview.json"] {
        let _ = std::fs::remove_file(sandbox.join(f));
    }
    tokio::time::sleep(corral_backend_linux::gc::NO_CREATOR_GRACE + Duration::from_millis(500))
        .await;
    let report = b.gc().await.unwrap();
    assert!(report.sandboxes.contains(&info.id), "{report:?}");
    let stat = std::fs::read_to_string(format!("/proc/{forwarder}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the forwarder {forwarder} outlived gc: {stat}"
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the host port outlived gc"
    );
}
