//! Runs: results, errors, cwd/env/stdin, timeout, abort, the output cap,
//! and both streaming forms, on memory, local and (where possible) linux.

use crate::sandbox_support;
use crate::sp;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_backend::{CancellationToken, Command, ErrorCode, ExitStatus, StreamKind};
use corral_sdk::{CreateOptions, OutputCallback, RunEvent, RunOptions, Sandbox};
use sandbox_support::{abort_on, all, eventually, records, timeout_after};

/// One chunk a callback saw.
type Chunk = (StreamKind, Vec<u8>);

/// Options whose abort token is cancelled `ms` milliseconds from now.
fn abort_after(ms: u64) -> RunOptions {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        trigger.cancel();
    });
    abort_on(token)
}

async fn sandbox(t: &sandbox_support::Target) -> Sandbox {
    Sandbox::create(t.backend.clone(), CreateOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn non_zero_exit_is_a_result_with_both_streams() {
    for t in all("non_zero_exit_is_a_result") {
        let s = sandbox(&t).await;
        let r = s.run("echo out; echo err >&2; exit 3").await.unwrap();
        assert_eq!(r.code(), 3, "{}", s.provider());
        assert!(!r.success());
        assert_eq!(r.exit, ExitStatus::Code(3));
        assert_eq!(r.stdout_text(), "out\n");
        assert_eq!(r.stderr_text(), "err\n");
        assert!(!r.truncated);
        let ok = s.run(Command::argv(["true"]).unwrap()).await.unwrap();
        assert!(ok.success());
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": "Exec closes stdin unless
/// `stdin` is given" — through `run`, `cat` without stdin reads EOF at once
/// instead of waiting, and with stdin reads exactly the bytes given.
#[tokio::test]
async fn run_closes_stdin_unless_stdin_is_given() {
    for t in all("run_closes_stdin_unless_stdin_is_given") {
        let s = sandbox(&t).await;
        let r = s.run_with("cat", timeout_after(10_000)).await;
        let r = r.unwrap_or_else(|e| panic!("{}: cat waited on stdin: {e}", s.provider()));
        assert!(r.success(), "{}", s.provider());
        assert!(
            r.stdout.is_empty(),
            "{}: {:?}",
            s.provider(),
            r.stdout_text()
        );
        let r = s
            .run_with(
                "cat",
                RunOptions {
                    stdin: Some(b"given".to_vec()),
                    ..timeout_after(10_000)
                },
            )
            .await
            .unwrap();
        assert_eq!(r.stdout, b"given", "{}", s.provider());
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn cwd_env_and_stdin_reach_the_command() {
    for t in all("cwd_env_and_stdin") {
        let s = sandbox(&t).await;
        // Through the file primitives: on local, paths inside commands are host paths.
        s.backend()
            .files()
            .mkdir(s.id(), &sp("/tmp/work"), true)
            .await
            .unwrap();
        let mut opts = RunOptions {
            cwd: Some("/tmp/work".into()),
            stdin: Some(b"from stdin".to_vec()),
            ..RunOptions::default()
        };
        opts.env
            .insert(corral_backend::EnvKey::new("GREETING").unwrap(), "hi there")
            .unwrap();
        let r = s
            .run_with("cat; echo; echo \"$GREETING\"; pwd", opts)
            .await
            .unwrap();
        let text = r.stdout_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "from stdin", "{}: {text}", s.provider());
        assert_eq!(lines[1], "hi there");
        assert!(lines[2].ends_with("/tmp/work"), "{text}");
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": exec "kills the entire remote
/// process group before settling on timeout or abort" — `run` settles with
/// `timeout` or `aborted` only then.
#[tokio::test]
async fn timeout_and_abort_are_errors() {
    for t in all("timeout_and_abort_are_errors") {
        let s = sandbox(&t).await;
        let err = s
            .run_with("sleep 30", timeout_after(200))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Timeout, "{err}");
        assert_eq!(err.operation, "run");

        let err = s.run_with("sleep 30", abort_after(200)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::Aborted, "{err}");
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": exec "kills the entire remote
/// process group before settling on timeout or abort" — a grandchild that
/// `run` started in the background does not outlive a timed-out or aborted
/// run.
#[tokio::test]
async fn timeout_and_abort_kill_the_whole_process_group() {
    for t in all("timeout_and_abort_kill_the_whole_process_group") {
        let s = sandbox(&t).await;
        let err = s
            .run_with(
                "(sleep 1; echo late > late-timeout.txt) & sleep 30",
                timeout_after(200),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Timeout, "{err}");
        let err = s
            .run_with(
                "(sleep 1; echo late > late-abort.txt) & sleep 30",
                abort_after(200),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Aborted, "{err}");
        // Past the moment a surviving grandchild would have written.
        tokio::time::sleep(Duration::from_millis(1_600)).await;
        let r = s
            .run("test -e late-timeout.txt; echo $?; test -e late-abort.txt; echo $?")
            .await
            .unwrap();
        assert_eq!(
            r.stdout_text(),
            "1\n1\n",
            "{}: a grandchild outlived its run",
            s.provider()
        );
        // The check sees a file that is there.
        let r = s
            .run("echo x > late-timeout.txt; test -e late-timeout.txt; echo $?")
            .await
            .unwrap();
        assert_eq!(r.stdout_text(), "0\n", "{}", s.provider());
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn invalid_input_fails_before_running() {
    for t in all("invalid_input_fails_before_running") {
        let s = sandbox(&t).await;
        for (cmd, opts) in [
            ("echo a\0b", RunOptions::default()),
            ("   ", RunOptions::default()),
            (
                "true",
                RunOptions {
                    cwd: Some("relative".into()),
                    ..RunOptions::default()
                },
            ),
        ] {
            let err = s.run_with(cmd, opts).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{cmd:?}: {err}");
            assert!(!err.to_string().contains('\n'));
        }
        let mut opts = RunOptions::default();
        opts.env
            .insert(corral_backend::EnvKey::new("A").unwrap(), "1")
            .unwrap();
        opts.secret_env
            .insert(corral_backend::EnvKey::new("A").unwrap(), "2")
            .unwrap();
        let err = s.run_with("true", opts).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn the_output_cap_truncates_and_says_so() {
    for t in all("the_output_cap_truncates") {
        let s = sandbox(&t).await;
        let r = s
            .run_with(
                "printf '0123456789'; printf 'abcdefghij' >&2",
                RunOptions {
                    max_output: Some(4),
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(r.stdout, b"0123");
        assert_eq!(r.stderr, b"abcd");
        assert!(r.truncated);
        assert_eq!(r.stdout_dropped, 6);
        assert_eq!(r.stderr_dropped, 6);
        let r = s
            .run_with(
                "printf '0123'",
                RunOptions {
                    max_output: Some(4),
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        assert!(!r.truncated, "exactly the cap is not truncated");
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": exec "emits chunks in arrival
/// order" — the callback sees them so, and past the output cap too.
#[tokio::test]
async fn callbacks_see_every_chunk_in_order_even_past_the_cap() {
    for t in all("callbacks_see_every_chunk") {
        let s = sandbox(&t).await;
        let seen: Arc<Mutex<Vec<Chunk>>> = Arc::default();
        let sink = seen.clone();
        let r = s
            .run_with(
                "echo one; echo two >&2; echo three",
                RunOptions {
                    max_output: Some(2),
                    on_output: Some(OutputCallback::new(move |k, b| {
                        sink.lock().unwrap().push((k, b.to_vec()))
                    })),
                    ..RunOptions::default()
                },
            )
            .await
            .unwrap();
        let seen = seen.lock().unwrap().clone();
        let out: Vec<u8> = seen
            .iter()
            .filter(|(k, _)| *k == StreamKind::Stdout)
            .flat_map(|(_, b)| b.clone())
            .collect();
        let err: Vec<u8> = seen
            .iter()
            .filter(|(k, _)| *k == StreamKind::Stderr)
            .flat_map(|(_, b)| b.clone())
            .collect();
        assert_eq!(out, b"one\nthree\n", "{}", s.provider());
        assert_eq!(err, b"two\n");
        assert_eq!(r.stdout, b"on");
        assert!(r.truncated);
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": exec "emits chunks in arrival
/// order" — the stream yields them so, then the result.
#[tokio::test]
async fn run_stream_yields_chunks_then_the_result() {
    for t in all("run_stream_yields_chunks") {
        let s = sandbox(&t).await;
        let mut stream = s.run_stream("echo a; sleep 0.1; echo b; exit 4", RunOptions::default());
        let mut out = Vec::new();
        let mut finished = None;
        while let Some(item) = stream.next().await {
            match item.unwrap() {
                RunEvent::Output { stream, bytes } => {
                    assert_eq!(stream, StreamKind::Stdout);
                    out.extend(bytes);
                }
                RunEvent::Finished(r) => finished = Some(r),
            }
        }
        assert_eq!(out, b"a\nb\n", "{}", s.provider());
        let r = finished.expect("a Finished event");
        assert_eq!(r.code(), 4);
        assert_eq!(r.stdout, b"a\nb\n");

        // Errors arrive as the last item.
        let stream = s.run_stream("sleep 30", timeout_after(100));
        assert_eq!(stream.result().await.unwrap_err().code, ErrorCode::Timeout);
        s.destroy().await.unwrap();
    }
}

/// SDK spec, "Rules an adapter must follow": exec "kills the entire remote
/// process group before settling on … abort" — dropping the stream aborts,
/// and the rest of the command never runs.
#[tokio::test]
async fn dropping_a_run_stream_aborts_the_command() {
    for t in all("dropping_a_run_stream_aborts") {
        let s = sandbox(&t).await;
        let mut stream = s.run_stream(
            "echo started; sleep 30; echo never > never.txt",
            RunOptions::default(),
        );
        match stream.next().await.unwrap().unwrap() {
            RunEvent::Output { bytes, .. } => assert_eq!(bytes, b"started\n"),
            other => panic!("{other:?}"),
        }
        drop(stream);
        // The activity record disappears once the abort has settled.
        let gone = eventually(100, Duration::from_millis(50), || async {
            records(s.backend(), s.id()).await == 0
        })
        .await;
        assert!(gone, "{}: the aborted run's record stayed", s.provider());
        let r = s.run("test -e never.txt; echo $?").await.unwrap();
        assert_eq!(r.stdout_text(), "1\n");
        s.destroy().await.unwrap();
    }
}

#[tokio::test]
async fn run_stream_is_a_futures_stream() {
    use futures_core::Stream;
    use std::pin::Pin;

    let t = sandbox_support::memory();
    let s = sandbox(&t).await;
    let mut stream = s.run_stream("echo x; echo y >&2", RunOptions::default());
    let mut kinds = Vec::new();
    while let Some(item) = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await {
        kinds.push(match item.unwrap() {
            RunEvent::Output { stream, .. } => format!("{stream:?}"),
            RunEvent::Finished(r) => format!("finished {}", r.code()),
        });
    }
    assert_eq!(kinds, ["Stdout", "Stderr", "finished 0"]);
}

/// SDK spec, "Rules an adapter must follow": "Translate errors. Map the
/// service's failures to `SandboxError` codes such as … `not_found`".
#[tokio::test]
async fn a_run_in_a_destroyed_sandbox_is_not_found() {
    for t in all("a_run_in_a_destroyed_sandbox_is_not_found") {
        let s = sandbox(&t).await;
        s.destroy().await.unwrap();
        let err = s.run("true").await.unwrap_err();
        assert_eq!(err.code, ErrorCode::NotFound, "{err}");
        assert_eq!(err.operation, "run");
        assert_eq!(err.provider, s.provider());
        assert!(
            err.to_string()
                .starts_with(&format!("SandboxError [not_found] {}.run: ", s.provider()))
        );
    }
}

#[test]
fn run_stream_outside_a_runtime_is_an_error_not_a_panic() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = sandbox_support::memory();
    let s = rt.block_on(sandbox(&t));
    let stream = s.run_stream("true", RunOptions::default());
    let err = rt.block_on(stream.result()).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("tokio runtime"), "{err}");
}
