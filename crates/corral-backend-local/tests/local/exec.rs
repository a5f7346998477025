//! exec: a cleared environment, working directories, stdin, exit codes,
//! and killing the whole group on timeout and abort.

use crate::common;
use corral_backend::rules::sp;
use std::time::Duration;

use common::{backend, host_root, sandbox, sh};
use corral_backend::{
    Backend, CancellationToken, CollectedOutput, Command, CreateRequest, ErrorCode, ExecRequest,
    ExitStatus, SignalName,
};

/// The variable the probe looks for; set only in the re-executed test binary.
const LEAK: &str = "CORRAL_TEST_LEAK";

/// Re-runs this test binary with `CORRAL_TEST_LEAK=1` in its environment
/// (setting it in this process would need `unsafe`), running the ignored
/// probe below.
#[test]
fn the_host_environment_does_not_leak_in() {
    let exe = std::env::current_exe().unwrap();
    // The probe's name inside this test binary: its module path without
    // the binary's own name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let probe = format!("{module}::env_probe");
    let out = std::process::Command::new(exe)
        .args([
            probe.as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LEAK, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "probe failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 passed"), "{text}");
}

#[tokio::test]
#[ignore = "run by the_host_environment_does_not_leak_in with the variable set"]
async fn env_probe() {
    assert_eq!(
        std::env::var(LEAK).as_deref(),
        Ok("1"),
        "the probe needs {LEAK}=1"
    );
    let (dir, b) = backend();
    let mut env = corral_backend::Environment::new();
    env.insert(corral_backend::EnvKey::new("FROM_CREATE").unwrap(), "c")
        .unwrap();
    env.insert(corral_backend::EnvKey::new("SHADOWED").unwrap(), "create")
        .unwrap();
    let info = b
        .create(CreateRequest {
            env,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut out = CollectedOutput::default();
    let req = ExecRequest::new(Command::argv(["env"]).unwrap()).env(
        corral_backend::Environment::new()
            .with("SHADOWED", "request")
            .unwrap(),
    );
    let outcome = b.exec(&info.id, req, &mut out).await.unwrap();
    assert!(outcome.status.success());
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    let home = host_root(&dir, &info.id).join("workspace");
    let home = home.to_str().unwrap();
    assert_eq!(
        lines,
        vec![
            format!("CORRAL_SANDBOX={}", info.id),
            "FROM_CREATE=c".to_string(),
            format!("HOME={home}"),
            format!("PATH={}", corral_backend::DEFAULT_PATH),
            format!("PWD={home}"),
            "SHADOWED=request".to_string(),
        ]
    );
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test]
async fn cwd_stdin_and_exit_codes() {
    let (dir, b) = backend();
    let info = sandbox(&b).await;
    b.files()
        .mkdir(&info.id, &sp("/workspace/sub/dir"), true)
        .await
        .unwrap();
    let mut out = CollectedOutput::default();
    let req = ExecRequest::new(Command::shell("pwd; cat; echo err >&2; exit 7").unwrap())
        .cwd(sp("/workspace/sub/../sub/dir"))
        .stdin(b"from stdin\n".to_vec());
    let outcome = b.exec(&info.id, req, &mut out).await.unwrap();
    assert_eq!(outcome.status, ExitStatus::Code(7));
    let expected_cwd = host_root(&dir, &info.id).join("workspace/sub/dir");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\nfrom stdin\n", expected_cwd.display())
    );
    assert_eq!(out.stderr, b"err\n");

    // stdin is closed unless given: cat ends at once.
    let mut out = CollectedOutput::default();
    let req = ExecRequest::new(Command::argv(["cat"]).unwrap()).timeout(Duration::from_secs(10));
    assert!(
        b.exec(&info.id, req, &mut out)
            .await
            .unwrap()
            .status
            .success()
    );
    assert!(out.stdout.is_empty());

    let (status, _) = sh(&b, &info.id, "kill -TERM $$").await;
    assert_eq!(status, ExitStatus::Signal(SignalName::Sigterm));

    let mut out = CollectedOutput::default();
    for (cwd, code) in [
        ("/workspace/missing", ErrorCode::NotFound),
        ("relative", ErrorCode::InvalidInput),
    ] {
        // A malformed working directory is refused where it is made.
        let err = match corral_backend::sandbox_path("cwd", cwd) {
            Ok(cwd) => b
                .exec(
                    &info.id,
                    ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(cwd),
                    &mut out,
                )
                .await
                .unwrap_err(),
            Err(e) => e,
        };
        assert_eq!(err.code(), code, "{cwd}: {err}");
    }
    // A file is not a working directory.
    b.files()
        .write(&info.id, &sp("/workspace/f"), b"x", None)
        .await
        .unwrap();
    let err = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(sp("/workspace/f")),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    // A working directory reached through a symlink out of the sandbox is refused.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        outside.path(),
        host_root(&dir, &info.id).join("workspace/out"),
    )
    .unwrap();
    let err = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(sp("/workspace/out")),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    let err = b
        .exec(
            &info.id,
            ExecRequest::new(Command::argv(["no-such-program-xyz"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    let err = b
        .exec(
            "loc-0000000000000000",
            ExecRequest::new(Command::argv(["true"]).unwrap()),
            &mut out,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    b.destroy(&info.id).await.unwrap();
}

const OUTLIVER: &str = "(sleep 1; echo late > late.txt) & sleep 30";

async fn assert_no_late_file(b: &corral_backend_local::LocalBackend, id: &str) {
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let err = b
        .files()
        .stat(id, &sp("/workspace/late.txt"))
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NotFound,
        "the grandchild survived: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_grandchild() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let started = std::time::Instant::now();
    let mut out = CollectedOutput::default();
    let req =
        ExecRequest::new(Command::shell(OUTLIVER).unwrap()).timeout(Duration::from_millis(300));
    let err = b.exec(&info.id, req, &mut out).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_no_late_file(&b, &info.id).await;
    b.destroy(&info.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_kills_the_grandchild() {
    let (_dir, b) = backend();
    let info = sandbox(&b).await;
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let mut out = CollectedOutput::default();
    let req = ExecRequest::new(Command::shell(OUTLIVER).unwrap()).abort(token);
    let err = b.exec(&info.id, req, &mut out).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Aborted, "{err}");
    assert_no_late_file(&b, &info.id).await;
    b.destroy(&info.id).await.unwrap();
}
