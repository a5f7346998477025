//! `exec` semantics: stdin, order, exit codes, process groups, pause.

use corral_backend::rules::sp;
use std::time::Duration;

use corral_backend::{
    Backend, CancellationToken, CollectedOutput, Command, CreateRequest, ErrorCode, ExecOutcome,
    ExecRequest, ExitStatus, SignalName, StreamKind,
};
use corral_backend_memory::MemoryBackend;

async fn setup() -> (MemoryBackend, String) {
    let b = MemoryBackend::new();
    let id = b.create(CreateRequest::default()).await.unwrap().id;
    (b, id)
}

async fn exec(
    b: &MemoryBackend,
    id: &str,
    req: ExecRequest,
) -> (corral_backend::Result<ExecOutcome>, CollectedOutput) {
    let mut out = CollectedOutput::default();
    let r = b.exec(id, req, &mut out).await;
    (r, out)
}

async fn sh(b: &MemoryBackend, id: &str, script: &str) -> (ExitStatus, CollectedOutput) {
    let (r, out) = exec(b, id, ExecRequest::new(Command::shell(script).unwrap())).await;
    (r.unwrap().status, out)
}

async fn exists(b: &MemoryBackend, id: &str, path: &str) -> bool {
    match b.files().stat(id, &sp(path)).await {
        Ok(_) => true,
        Err(e) if e.code() == ErrorCode::NotFound => false,
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn stdin_is_closed_unless_given() {
    let (b, id) = setup().await;
    let (r, out) = exec(&b, &id, ExecRequest::new(Command::argv(["cat"]).unwrap())).await;
    assert_eq!(r.unwrap().status, ExitStatus::Code(0));
    assert!(out.stdout.is_empty());
    let req = ExecRequest::new(Command::shell("cat; echo after").unwrap()).stdin(b"in\n".to_vec());
    let (r, out) = exec(&b, &id, req).await;
    r.unwrap();
    assert_eq!(out.stdout, b"in\nafter\n");
}

#[tokio::test]
async fn chunks_arrive_in_order_across_streams() {
    let (b, id) = setup().await;
    let (status, out) = sh(&b, &id, "echo 1; echo 2 >&2; echo 3; echo 4 1>&2").await;
    assert_eq!(status, ExitStatus::Code(0));
    let chunks: Vec<(StreamKind, &[u8])> =
        out.chunks.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    assert_eq!(
        chunks,
        [
            (StreamKind::Stdout, &b"1\n"[..]),
            (StreamKind::Stderr, b"2\n"),
            (StreamKind::Stdout, b"3\n"),
            (StreamKind::Stderr, b"4\n"),
        ]
    );
}

#[tokio::test]
async fn exit_codes_and_unknown_commands() {
    let (b, id) = setup().await;
    assert_eq!(sh(&b, &id, "exit 42").await.0, ExitStatus::Code(42));
    assert_eq!(sh(&b, &id, "exit 256").await.0, ExitStatus::Code(0));
    let (status, out) = sh(&b, &id, "frobnicate --now").await;
    assert_eq!(status, ExitStatus::Code(127));
    assert_eq!(out.stderr, b"sh: frobnicate: not found\n");
    let (r, _) = exec(&b, &id, ExecRequest::new(Command::argv(["false"]).unwrap())).await;
    assert_eq!(r.unwrap().status, ExitStatus::Code(1));
    let (r, _) = exec(
        &b,
        &id,
        ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(sp("/none")),
    )
    .await;
    assert_eq!(r.unwrap_err().code(), ErrorCode::NotFound);
    b.files()
        .write(&id, &sp("/workspace/f"), b"", None)
        .await
        .unwrap();
    let (r, _) = exec(
        &b,
        &id,
        ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(sp("/workspace/f")),
    )
    .await;
    assert_eq!(r.unwrap_err().code(), ErrorCode::InvalidInput);
}

#[tokio::test]
async fn a_timeout_cancels_the_background_job_before_settling() {
    let (b, id) = setup().await;
    let req = ExecRequest::new(
        Command::shell("(sleep 1; echo late > late.txt) & echo started; sleep 30").unwrap(),
    )
    .timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (r, out) = exec(&b, &id, req).await;
    assert_eq!(r.unwrap_err().code(), ErrorCode::Timeout);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        out.stdout, b"started\n",
        "output before the kill is delivered"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        !exists(&b, &id, "/workspace/late.txt").await,
        "late.txt was written"
    );
    let usage = b.usage_ops().unwrap().usage(&id).await.unwrap();
    assert_eq!(usage.processes, Some(0));
}

#[tokio::test]
async fn background_jobs_die_with_their_exec_unless_waited_for() {
    let (b, id) = setup().await;
    let (status, _) = sh(&b, &id, "(sleep 0.2; echo late > late.txt) &").await;
    assert_eq!(status, ExitStatus::Code(0));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!exists(&b, &id, "/workspace/late.txt").await);
    sh(&b, &id, "(sleep 0.05; echo kept > kept.txt) & wait").await;
    assert_eq!(
        b.files()
            .read(&id, &sp("/workspace/kept.txt"))
            .await
            .unwrap(),
        b"kept\n"
    );
}

#[tokio::test]
async fn abort_cancels_everything_it_started() {
    let (b, id) = setup().await;
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let req = ExecRequest::new(Command::shell("(sleep 0.5; touch late) & sleep 30").unwrap())
        .abort(token);
    let (r, _) = exec(&b, &id, req).await;
    assert_eq!(r.unwrap_err().code(), ErrorCode::Aborted);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!exists(&b, &id, "/workspace/late").await);
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let req = ExecRequest::new(Command::shell("touch early").unwrap()).abort(cancelled);
    assert_eq!(
        exec(&b, &id, req).await.0.unwrap_err().code(),
        ErrorCode::Aborted
    );
    assert!(!exists(&b, &id, "/workspace/early").await);
}

#[tokio::test(start_paused = true)]
async fn sleep_and_timeouts_follow_tokio_time() {
    let (b, id) = setup().await;
    let (status, out) = sh(&b, &id, "sleep 3600; echo done").await;
    assert_eq!(
        (status, out.stdout),
        (ExitStatus::Code(0), b"done\n".to_vec())
    );
    let req =
        ExecRequest::new(Command::shell("sleep 100").unwrap()).timeout(Duration::from_secs(50));
    let before = tokio::time::Instant::now();
    assert_eq!(
        exec(&b, &id, req).await.0.unwrap_err().code(),
        ErrorCode::Timeout
    );
    assert_eq!(before.elapsed(), Duration::from_secs(50));
}

#[tokio::test]
async fn a_busy_command_still_times_out() {
    let (b, id) = setup().await;
    let req = ExecRequest::new(Command::shell("yes > /dev/null").unwrap())
        .timeout(Duration::from_millis(100));
    assert_eq!(
        exec(&b, &id, req).await.0.unwrap_err().code(),
        ErrorCode::Timeout
    );
    let req = ExecRequest::new(Command::shell("yes | cat > /dev/null").unwrap())
        .timeout(Duration::from_millis(100));
    assert_eq!(
        exec(&b, &id, req).await.0.unwrap_err().code(),
        ErrorCode::Timeout
    );
}

#[tokio::test]
async fn a_paused_sandbox_refuses_exec_and_freezes_running_commands() {
    let (b, id) = setup().await;
    let pause = b.pause_ops().unwrap();
    let (b2, id2) = (b.clone(), id.clone());
    let running =
        tokio::spawn(async move { sh(&b2, &id2, "sleep 0.1; echo x > f; echo done").await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    pause.pause(&id).await.unwrap();
    pause.pause(&id).await.unwrap();
    assert_eq!(
        b.connect(&id).await.unwrap().status,
        corral_backend::SandboxStatus::Paused
    );
    let (r, _) = exec(&b, &id, ExecRequest::new(Command::argv(["true"]).unwrap())).await;
    assert_eq!(r.unwrap_err().code(), ErrorCode::Conflict);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !exists(&b, &id, "/workspace/f").await,
        "a frozen command ran"
    );
    assert!(!running.is_finished());
    pause.resume(&id).await.unwrap();
    let (status, out) = running.await.unwrap();
    assert_eq!(
        (status, out.stdout),
        (ExitStatus::Code(0), b"done\n".to_vec())
    );
    assert!(exists(&b, &id, "/workspace/f").await);
}

#[tokio::test]
async fn dropping_the_exec_future_kills_its_group() {
    let (b, id) = setup().await;
    let req = ExecRequest::new(Command::shell("(sleep 0.3; touch late) & sleep 30").unwrap());
    let mut out = CollectedOutput::default();
    let dropped =
        tokio::time::timeout(Duration::from_millis(100), b.exec(&id, req, &mut out)).await;
    assert!(dropped.is_err());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!exists(&b, &id, "/workspace/late").await);
    let usage = b.usage_ops().unwrap().usage(&id).await.unwrap();
    assert_eq!(usage.processes, Some(0));
}

#[tokio::test]
async fn kill_and_destroy_end_a_running_exec_with_a_signal() {
    let (b, id) = setup().await;
    let (b2, id2) = (b.clone(), id.clone());
    let victim = tokio::spawn(async move { sh(&b2, &id2, "sleep 30").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let usage = b.usage_ops().unwrap().usage(&id).await.unwrap();
    assert_eq!(usage.processes, Some(1));
    // Pids are deterministic: the sandbox's first process is 2.
    let (status, out) = sh(&b, &id, "kill 2; echo $?").await;
    assert_eq!((status, out.stdout), (ExitStatus::Code(0), b"0\n".to_vec()));
    assert_eq!(
        victim.await.unwrap().0,
        ExitStatus::Signal(SignalName::Sigterm)
    );
    let (_, out) = sh(&b, &id, "kill 2; echo $?").await;
    assert_eq!(out.stderr, b"sh: kill: (2) - No such process\n");
    assert_eq!(out.stdout, b"1\n");
    let (b2, id2) = (b.clone(), id.clone());
    let victim = tokio::spawn(async move { sh(&b2, &id2, "sleep 30").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    b.destroy(&id).await.unwrap();
    assert_eq!(
        victim.await.unwrap().0,
        ExitStatus::Signal(SignalName::Sigkill)
    );
}
