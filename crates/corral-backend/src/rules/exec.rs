//! Rules of `exec`: stdin, order, exit, and killing the whole group.

use std::time::Duration;

use crate::backend::Backend;
use crate::command::Command;
use crate::error::ErrorCode;
use crate::exec::{CollectedOutput, ExecRequest, ExitStatus, RunAs, StreamKind};
use crate::sandbox::WORKSPACE_DIR;

use super::{fresh, sp};

/// How long any single rule command may take before the rule calls it a hang.
const HANG: Duration = Duration::from_secs(30);

async fn run(
    backend: &dyn Backend,
    id: &str,
    req: ExecRequest,
    rule: &str,
) -> (crate::Result<crate::ExecOutcome>, CollectedOutput) {
    let mut out = CollectedOutput::default();
    let res = tokio::time::timeout(HANG, backend.exec(id, req, &mut out))
        .await
        .unwrap_or_else(|_| panic!("{rule}: exec did not settle within {HANG:?}"));
    (res, out)
}

/// SDK rule "Exec closes stdin unless `stdin` is given": `cat` with no stdin
/// ends at once with no output instead of waiting for input.
pub async fn exec_closes_stdin_unless_given(backend: &dyn Backend) {
    let rule = "exec_closes_stdin_unless_given";
    let sb = fresh(backend, rule).await;
    let req = ExecRequest::new(Command::argv(["cat"]).unwrap()).timeout(Duration::from_secs(20));
    let (res, out) = run(backend, &sb.id, req, rule).await;
    let outcome = res.unwrap_or_else(|e| panic!("{rule}: cat without stdin failed: {e}"));
    assert_eq!(outcome.status, ExitStatus::Code(0), "{rule}");
    assert!(
        out.stdout.is_empty(),
        "{rule}: cat printed {:?}",
        out.stdout
    );
    backend.destroy(&sb.id).await.unwrap();
}

/// Given stdin is delivered whole and then closed.
pub async fn exec_passes_stdin_then_eof(backend: &dyn Backend) {
    let rule = "exec_passes_stdin_then_eof";
    let sb = fresh(backend, rule).await;
    let payload: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let req = ExecRequest::new(Command::argv(["cat"]).unwrap()).stdin(payload.clone());
    let (res, out) = run(backend, &sb.id, req, rule).await;
    res.unwrap_or_else(|e| panic!("{rule}: {e}"));
    assert_eq!(out.stdout.len(), payload.len(), "{rule}: stdout length");
    assert!(out.stdout == payload, "{rule}: stdout differs from stdin");
    backend.destroy(&sb.id).await.unwrap();
}

/// SDK rule "emits chunks in arrival order": within a stream bytes are in
/// order, and output separated in time arrives in that order across streams.
pub async fn exec_delivers_chunks_in_arrival_order(backend: &dyn Backend) {
    let rule = "exec_delivers_chunks_in_arrival_order";
    let sb = fresh(backend, rule).await;
    let script =
        "echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; sleep 0.3; echo four >&2";
    let (res, out) = run(
        backend,
        &sb.id,
        ExecRequest::new(Command::shell(script).unwrap()),
        rule,
    )
    .await;
    res.unwrap_or_else(|e| panic!("{rule}: {e}"));
    assert_eq!(out.stdout, b"one\nthree\n", "{rule}: stdout");
    assert_eq!(out.stderr, b"two\nfour\n", "{rule}: stderr");
    let streams: Vec<StreamKind> = out.chunks.iter().map(|(s, _)| *s).collect();
    let mut order: Vec<StreamKind> = Vec::new();
    for s in streams {
        if order.last() != Some(&s) {
            order.push(s);
        }
    }
    assert_eq!(
        order,
        vec![
            StreamKind::Stdout,
            StreamKind::Stderr,
            StreamKind::Stdout,
            StreamKind::Stderr
        ],
        "{rule}: chunks out of arrival order"
    );
    backend.destroy(&sb.id).await.unwrap();
}

/// A non-zero exit is an outcome, not an error.
pub async fn exec_nonzero_exit_is_a_result(backend: &dyn Backend) {
    let rule = "exec_nonzero_exit_is_a_result";
    let sb = fresh(backend, rule).await;
    let (res, _) = run(
        backend,
        &sb.id,
        ExecRequest::new(Command::shell("exit 3").unwrap()),
        rule,
    )
    .await;
    let outcome = res.unwrap_or_else(|e| panic!("{rule}: exit 3 became an error: {e}"));
    assert_eq!(outcome.status, ExitStatus::Code(3), "{rule}");
    assert!(
        outcome.finished_at_ms >= outcome.started_at_ms,
        "{rule}: interval"
    );
    let (res, _) = run(
        backend,
        &sb.id,
        ExecRequest::new(Command::argv(["false"]).unwrap()),
        rule,
    )
    .await;
    assert_eq!(res.unwrap().status, ExitStatus::Code(1), "{rule}: false");
    backend.destroy(&sb.id).await.unwrap();
}

/// The working directory and environment asked for are the ones the command sees.
pub async fn exec_honours_cwd_and_env(backend: &dyn Backend) {
    let rule = "exec_honours_cwd_and_env";
    let sb = fresh(backend, rule).await;
    let sub = sp(&format!("{WORKSPACE_DIR}/sub"));
    backend.files().mkdir(&sb.id, &sub, true).await.unwrap();
    let req =
        ExecRequest::new(Command::shell("echo \"$CORRAL_RULE_VAR\"; echo hi > here.txt").unwrap())
            .cwd(sub.clone())
            .env(
                crate::Environment::new()
                    .with("CORRAL_RULE_VAR", "it's $value")
                    .unwrap(),
            );
    let (res, out) = run(backend, &sb.id, req, rule).await;
    res.unwrap_or_else(|e| panic!("{rule}: {e}"));
    assert_eq!(out.stdout, b"it's $value\n", "{rule}: env value");
    let written = backend
        .files()
        .read(&sb.id, &sp(&format!("{sub}/here.txt")))
        .await
        .unwrap_or_else(|e| panic!("{rule}: the command did not run in {sub}: {e}"));
    assert_eq!(written, b"hi\n", "{rule}");
    let req = ExecRequest::new(Command::argv(["true"]).unwrap()).cwd(sp("/no/such/dir"));
    let (res, _) = run(backend, &sb.id, req, rule).await;
    let err = res.expect_err("a missing cwd must fail");
    assert_eq!(err.code(), ErrorCode::NotFound, "{rule}: {err}");
    backend.destroy(&sb.id).await.unwrap();
}

/// Malformed commands are refused with `invalid_input` before anything runs:
/// where the [`Command`] is made, so no backend ever receives one.
pub async fn exec_refuses_malformed_commands(backend: &dyn Backend) {
    let rule = "exec_refuses_malformed_commands";
    let sb = fresh(backend, rule).await;
    // Each is refused at construction now (it used to reach the backend
    // and be refused there, with the same code).
    let bad = [
        ("an empty argv", Command::argv(Vec::<String>::new())),
        ("a NUL byte", Command::argv(["echo", "a\0b"])),
        ("257 arguments", Command::argv(vec!["x"; 257])),
        (
            "an over-long argument",
            Command::argv(["echo".to_string(), "x".repeat(65_537)]),
        ),
    ];
    for (what, made) in bad {
        let err =
            crate::BackendError::from(made.expect_err(&format!("{rule}: {what} must be refused")));
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{rule}: {what}: {err}");
    }
    // A malformed environment or working directory cannot reach a backend
    // either: each is refused where it is made.
    assert_eq!(
        crate::sandbox_path("cwd", "relative").unwrap_err().code(),
        ErrorCode::InvalidInput,
        "{rule}: a relative cwd must be refused"
    );
    assert!(
        crate::Environment::new().with("1BAD", "x").is_err(),
        "{rule}: env key 1BAD must be refused"
    );
    let (res, _) = run(
        backend,
        "no-such-sandbox",
        ExecRequest::new(Command::argv(["true"]).unwrap()),
        rule,
    )
    .await;
    assert_eq!(
        res.unwrap_err().code(),
        ErrorCode::NotFound,
        "{rule}: unknown id"
    );
    backend.destroy(&sb.id).await.unwrap();
}

/// The script used by the group-kill rules: a background grandchild that
/// would write `late.txt` one second later, and a foreground that would run
/// for 30 seconds.
const OUTLIVER: &str = "(sleep 1; echo late > late.txt) & sleep 30";

async fn assert_grandchild_dead(backend: &dyn Backend, id: &str, rule: &str) {
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let late = sp(&format!("{WORKSPACE_DIR}/late.txt"));
    match backend.files().stat(id, &late).await {
        Err(e) if e.code() == ErrorCode::NotFound => {}
        Err(e) => panic!("{rule}: stat {late}: {e}"),
        Ok(_) => panic!("{rule}: the grandchild outlived the settled exec and wrote {late}"),
    }
}

/// SDK rule "kills the entire process group before settling on timeout":
/// after the `timeout` error nothing the command started runs.
pub async fn exec_timeout_kills_the_whole_group_before_settling(backend: &dyn Backend) {
    let rule = "exec_timeout_kills_the_whole_group_before_settling";
    let sb = fresh(backend, rule).await;
    let req =
        ExecRequest::new(Command::shell(OUTLIVER).unwrap()).timeout(Duration::from_millis(300));
    let (res, _) = run(backend, &sb.id, req, rule).await;
    let err = res.expect_err("a 30 s command with a 300 ms timeout must fail");
    assert_eq!(err.code(), ErrorCode::Timeout, "{rule}: {err}");
    assert_grandchild_dead(backend, &sb.id, rule).await;
    backend.destroy(&sb.id).await.unwrap();
}

/// SDK rule "kills the entire process group before settling on abort".
pub async fn exec_abort_kills_the_whole_group_before_settling(backend: &dyn Backend) {
    let rule = "exec_abort_kills_the_whole_group_before_settling";
    let sb = fresh(backend, rule).await;
    let token = crate::CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let req = ExecRequest::new(Command::shell(OUTLIVER).unwrap()).abort(token);
    let (res, _) = run(backend, &sb.id, req, rule).await;
    let err = res.expect_err("an aborted command must fail");
    assert_eq!(err.code(), ErrorCode::Aborted, "{rule}: {err}");
    assert_grandchild_dead(backend, &sb.id, rule).await;
    backend.destroy(&sb.id).await.unwrap();
}

/// Whom a command runs as: root (asked for or not) runs as every backend
/// always has; the unprivileged user runs as uid 1000 where the backend
/// declares `run_as_user`, and is refused with `unsupported` before
/// anything runs where it does not (by `exec` and, where declared,
/// `start_process`). SDK rules "Declare what you implement" and "Fail
/// closed": an identity the backend cannot give is `unsupported`, never
/// quietly root.
pub async fn exec_runs_as_the_user_only_where_declared(backend: &dyn Backend) {
    let rule = "exec_runs_as_the_user_only_where_declared";
    let caps = backend.capabilities();
    let sb = fresh(backend, rule).await;
    let marker = sp(&format!("{WORKSPACE_DIR}/ran-as-user"));
    let rows: [(Option<RunAs>, &str); 3] = [
        (None, "root by default"),
        (Some(RunAs::Root), "root when asked"),
        (Some(RunAs::User), "the user when asked"),
    ];
    for (run_as, what) in rows {
        // Relative, in the workspace: a backend on the host maps it.
        let mut req = ExecRequest::new(Command::shell("echo ran > ran-as-user").unwrap())
            .cwd(sp(WORKSPACE_DIR));
        req.run_as = run_as;
        let (res, _) = run(backend, &sb.id, req, rule).await;
        let refused = run_as == Some(RunAs::User) && !caps.run_as_user;
        if refused {
            let err = res.expect_err(&format!("{rule}: {what}: must be refused"));
            assert_eq!(err.code(), ErrorCode::Unsupported, "{rule}: {what}: {err}");
            match backend.files().stat(&sb.id, &marker).await {
                Err(e) if e.code() == ErrorCode::NotFound => {}
                other => panic!("{rule}: {what}: the refused command ran: {other:?}"),
            }
        } else if run_as == Some(RunAs::User) {
            // Whether the user may write the workspace is the backend's own
            // business; only that it ran, and as whom.
            assert!(res.is_ok(), "{rule}: {what}: {res:?}");
            let mut req = ExecRequest::new(Command::argv(["id", "-u"]).unwrap());
            req.run_as = run_as;
            let (res, out) = run(backend, &sb.id, req, rule).await;
            res.unwrap_or_else(|e| panic!("{rule}: {what}: id -u: {e}"));
            assert_eq!(out.stdout, b"1000\n", "{rule}: {what}");
        } else {
            let outcome = res.unwrap_or_else(|e| panic!("{rule}: {what}: {e}"));
            assert_eq!(outcome.status, ExitStatus::Code(0), "{rule}: {what}");
            backend
                .files()
                .remove(&sb.id, &marker, false)
                .await
                .unwrap();
        }
    }
    if let Some(processes) = backend.process_ops()
        && !caps.run_as_user
    {
        let spec = crate::ProcessSpec {
            command: Command::shell("echo ran > ran-as-user").unwrap(),
            cwd: Some(sp(WORKSPACE_DIR)),
            env: crate::Environment::new(),
            run_as: Some(RunAs::User),
        };
        let err = processes
            .start_process(&sb.id, spec)
            .await
            .expect_err("start_process as the user must be refused");
        assert_eq!(
            err.code(),
            ErrorCode::Unsupported,
            "{rule}: start_process: {err}"
        );
    }
    backend.destroy(&sb.id).await.unwrap();
}
