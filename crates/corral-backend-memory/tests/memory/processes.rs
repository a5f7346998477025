//! Live processes and terminals.

use corral_backend::rules::sp;
use std::time::Duration;

use corral_backend::{
    Backend, Command, ControlSignal, CreateRequest, ErrorCode, ExitStatus, ProcessSpec, SignalName,
    TerminalSpec,
};
use corral_backend_memory::MemoryBackend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BOUND: Duration = Duration::from_secs(10);

async fn setup() -> (MemoryBackend, String) {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    (b, id)
}

fn spec(command: Command) -> ProcessSpec {
    ProcessSpec {
        command,
        cwd: None,
        env: Default::default(),
        run_as: None,
    }
}

/// Reads until `needle` shows up; everything read so far.
async fn read_until(r: &mut (impl AsyncReadExt + Unpin), needle: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = tokio::time::timeout(BOUND, r.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(
            n > 0,
            "EOF before {needle:?}; read {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(seen).unwrap()
}

#[tokio::test]
async fn half_close_ends_cat_and_stdout_reaches_eof() {
    let (b, id) = setup().await;
    let ops = b.process_ops().unwrap();
    let mut p = ops
        .start_process(&id, spec(Command::argv(["cat"]).unwrap()))
        .await
        .unwrap();
    assert_eq!(p.control.pid(), Some(2));
    p.stdin.write_all(b"line one\n").await.unwrap();
    assert_eq!(read_until(&mut p.stdout, "\n").await, "line one\n");
    p.stdin.write_all(b"two").await.unwrap();
    p.stdin.shutdown().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(BOUND, p.stdout.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rest, b"two");
    let status = tokio::time::timeout(BOUND, p.control.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, ExitStatus::Code(0));
    // Settled once, re-readable.
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));
    p.control.signal(ControlSignal::Sigterm).await.unwrap();
    p.control.kill().await.unwrap();
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));
    let mut err = Vec::new();
    p.stderr.read_to_end(&mut err).await.unwrap();
    assert!(err.is_empty());
}

#[tokio::test]
async fn signals_kill_the_group_and_settle_once() {
    let (b, id) = setup().await;
    let ops = b.process_ops().unwrap();
    let mut p = ops
        .start_process(
            &id,
            spec(Command::shell("(sleep 0.3; touch late) & echo up; sleep 30").unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(read_until(&mut p.stdout, "up\n").await, "up\n");
    assert_eq!(
        b.usage_ops().unwrap().usage(&id).await.unwrap().processes,
        Some(2)
    );
    p.control.signal(ControlSignal::Sigterm).await.unwrap();
    p.control.signal(ControlSignal::Sigint).await.unwrap();
    p.control.kill().await.unwrap();
    assert_eq!(
        p.control.wait().await.unwrap(),
        ExitStatus::Signal(SignalName::Sigterm)
    );
    let mut rest = Vec::new();
    p.stdout.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let err = b
        .files()
        .stat(&id, &sp("/workspace/late"))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NotFound,
        "the background job outlived the kill"
    );
    assert_eq!(
        b.usage_ops().unwrap().usage(&id).await.unwrap().processes,
        Some(0)
    );
}

#[tokio::test]
async fn exit_codes_env_cwd_and_refusals() {
    let (b, id) = setup().await;
    let ops = b.process_ops().unwrap();
    let mut s = spec(Command::shell("echo $X $PWD >&2; exit 5").unwrap());
    s.env
        .insert(corral_backend::EnvKey::new("X").unwrap(), "x")
        .unwrap();
    s.cwd = Some(sp("/tmp"));
    let mut p = ops.start_process(&id, s).await.unwrap();
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(5));
    let mut err = String::new();
    p.stderr.read_to_string(&mut err).await.unwrap();
    assert_eq!(err, "x /tmp\n");
    // An empty argv is refused where the command is made: no process spec
    // can carry one.
    let bad = corral_backend::BackendError::from(Command::argv(Vec::<String>::new()).unwrap_err());
    assert_eq!(bad.code(), ErrorCode::InvalidInput);
    let mut s = spec(Command::argv(["true"]).unwrap());
    s.cwd = Some(sp("/missing"));
    assert_eq!(
        ops.start_process(&id, s).await.unwrap_err().code(),
        ErrorCode::NotFound
    );
    b.pause_ops().unwrap().pause(&id).await.unwrap();
    let paused = ops
        .start_process(&id, spec(Command::argv(["true"]).unwrap()))
        .await
        .unwrap_err();
    assert_eq!(paused.code(), ErrorCode::Conflict);
}

#[tokio::test]
async fn destroying_the_sandbox_kills_its_processes() {
    let (b, id) = setup().await;
    let ops = b.process_ops().unwrap();
    let p = ops
        .start_process(&id, spec(Command::argv(["sleep", "30"]).unwrap()))
        .await
        .unwrap();
    b.destroy(&id).await.unwrap();
    let status = tokio::time::timeout(BOUND, p.control.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, ExitStatus::Signal(SignalName::Sigkill));
}

fn terminal(command: Option<Command>) -> TerminalSpec {
    TerminalSpec {
        command,
        cwd: None,
        cols: 80,
        rows: 24,
        env: Default::default(),
        run_as: None,
    }
}

#[tokio::test]
async fn the_terminal_is_an_interactive_shell() {
    let (b, id) = setup().await;
    let mut t = b
        .terminal_ops()
        .unwrap()
        .open_terminal(&id, terminal(None))
        .await
        .unwrap();
    assert_eq!(read_until(&mut t.output, "$ ").await, "$ ");
    t.input
        .write_all(b"cd /tmp; echo $COLUMNS x $LINES\r")
        .await
        .unwrap();
    assert_eq!(read_until(&mut t.output, "$ ").await, "80 x 24\n$ ");
    t.control.resize(100, 40).await.unwrap();
    t.input
        .write_all(b"\npwd; echo $COLUMNS; nope\n")
        .await
        .unwrap();
    let out = read_until(&mut t.output, "not found\n$ ").await;
    assert_eq!(out, "/tmp\n100\nsh: nope: not found\n$ ");
    // ^C interrupts the running line, not the shell.
    t.input.write_all(b"sleep 30; echo never\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    t.control.signal(ControlSignal::Sigint).await.unwrap();
    assert_eq!(read_until(&mut t.output, "$ ").await, "^C\n$ ");
    t.input.write_all(b"echo $?; exit 3\n").await.unwrap();
    let mut rest = String::new();
    tokio::time::timeout(BOUND, t.output.read_to_string(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rest, "130\n");
    assert_eq!(t.control.wait().await.unwrap(), ExitStatus::Code(3));
}

#[tokio::test]
async fn a_terminal_can_run_a_command_and_be_killed() {
    let (b, id) = setup().await;
    let ops = b.terminal_ops().unwrap();
    let mut t = ops
        .open_terminal(
            &id,
            terminal(Some(Command::shell("read l; echo got $l >&2").unwrap())),
        )
        .await
        .unwrap();
    t.input.write_all(b"it\n").await.unwrap();
    let mut out = String::new();
    t.output.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "got it\n");
    assert_eq!(t.control.wait().await.unwrap(), ExitStatus::Code(0));
    let t = ops.open_terminal(&id, terminal(None)).await.unwrap();
    t.control.kill().await.unwrap();
    assert_eq!(
        t.control.wait().await.unwrap(),
        ExitStatus::Signal(SignalName::Sigkill)
    );
    // EOF on the input ends the shell with the last status.
    let mut t = ops.open_terminal(&id, terminal(None)).await.unwrap();
    t.input.write_all(b"false\n").await.unwrap();
    t.input.shutdown().await.unwrap();
    let mut out = String::new();
    t.output.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "$ $ ");
    assert_eq!(t.control.wait().await.unwrap(), ExitStatus::Code(1));
}
