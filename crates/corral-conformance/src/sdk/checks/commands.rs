//! `commands` and `command-timeout`.

use std::time::Duration;

use corral_backend::{Command, Environment, ErrorCode, StreamKind};
use corral_sdk::{OutputCallback, RunOptions, RunResult};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, expect_code, step};

/// How long a command of this check that should end at once may take
/// before it counts as hung (a generous bound, never a measurement).
const HANG_BOUND: Duration = Duration::from_secs(30);

/// Fails unless `result` exited with `code` and printed exactly `stdout`
/// and `stderr`.
fn expect_output(
    what: &str,
    result: &RunResult,
    code: i32,
    stdout: &[u8],
    stderr: &[u8],
) -> Result<(), Failure> {
    ensure(
        result.code() == code && result.stdout == stdout && result.stderr == stderr,
        || {
            format!(
                "{what}: exit {} stdout {} stderr {}, expected exit {code} stdout {} stderr {}",
                result.code(),
                shown(&result.stdout),
                shown(&result.stderr),
                shown(stdout),
                shown(stderr)
            )
        },
    )
}

/// Options bounding a command that should end at once.
fn bounded() -> RunOptions {
    RunOptions {
        timeout: Some(HANG_BOUND),
        ..RunOptions::default()
    }
}

/// Exit codes, stdout and stderr apart, a non-zero exit as a result,
/// output streamed to a callback as it arrives, argv commands, stdin given
/// and closed by default, the working directory, and the create-time and
/// per-run environment.
pub(crate) async fn commands(scope: &mut SdkScope) -> Result<(), Failure> {
    let mut options = scope.create_options();
    options.env = Environment::new()
        .with("CORRAL_CONFORMANCE_CREATE", "from create")
        .map_err(|e| Failure::step("the create environment", e))?;
    let sandbox = scope.create(options).await?;

    let ok = step("run echo", sandbox.run("echo hello").await)?;
    expect_output("echo hello", &ok, 0, b"hello\n", b"")?;
    ensure(ok.success(), || "echo hello: not a success".to_string())?;

    let script = "printf out; printf err >&2; exit 3";
    let failed = step(
        "run a command exiting 3",
        sandbox.run_with(script, bounded()).await,
    )?;
    expect_output(script, &failed, 3, b"out", b"err")?;
    ensure(!failed.success(), || {
        format!("{script}: reported a success")
    })?;

    let streamed = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let sink = std::sync::Arc::clone(&streamed);
    let on_output = OutputCallback::new(move |stream, bytes| {
        if let Ok(mut seen) = sink.lock() {
            match stream {
                StreamKind::Stdout => seen.0.extend_from_slice(bytes),
                StreamKind::Stderr => seen.1.extend_from_slice(bytes),
            }
        }
    });
    let live = step(
        "run with an output callback",
        sandbox
            .run_with(
                "echo one; echo two >&2; echo three",
                RunOptions {
                    on_output: Some(on_output),
                    ..bounded()
                },
            )
            .await,
    )?;
    expect_output("streamed command", &live, 0, b"one\nthree\n", b"two\n")?;
    let (out, err) = streamed
        .lock()
        .map(|seen| seen.clone())
        .map_err(|_| Failure::new("the output callback panicked"))?;
    ensure(out == live.stdout && err == live.stderr, || {
        format!(
            "the output callback saw stdout {} stderr {}, the result holds {} and {}",
            shown(&out),
            shown(&err),
            shown(&live.stdout),
            shown(&live.stderr)
        )
    })?;

    let argv =
        Command::argv(["printf", "%s|%s", "one arg", "two"]).expect("a fixed, valid command");
    let ran = step(
        "run an argv command",
        sandbox.run_with(argv, bounded()).await,
    )?;
    expect_output("argv printf", &ran, 0, b"one arg|two", b"")?;

    let input = b"line one\nline two\n".to_vec();
    let cat = step(
        "run cat with stdin",
        sandbox
            .run_with(
                "cat",
                RunOptions {
                    stdin: Some(input.clone()),
                    ..bounded()
                },
            )
            .await,
    )?;
    expect_output("cat with stdin", &cat, 0, &input, b"")?;
    let closed = step(
        "run cat without stdin (stdin must be closed)",
        sandbox.run_with("cat", bounded()).await,
    )?;
    expect_output("cat without stdin", &closed, 0, b"", b"")?;

    step("run mkdir", sandbox.run("mkdir -p sub").await)?;
    let pwd = step(
        "run pwd in /workspace/sub",
        sandbox
            .run_with(
                "pwd",
                RunOptions {
                    cwd: Some("/workspace/sub".to_string()),
                    ..bounded()
                },
            )
            .await,
    )?;
    // A backend that isolates nothing prints the host path behind it.
    ensure(
        pwd.code() == 0 && pwd.stdout_text().trim_end().ends_with("/workspace/sub"),
        || {
            format!(
                "pwd with cwd /workspace/sub: exit {} stdout {}",
                pwd.code(),
                shown(&pwd.stdout)
            )
        },
    )?;

    let env = Environment::new()
        .with("CORRAL_CONFORMANCE_RUN", "from run")
        .map_err(|e| Failure::step("the run environment", e))?;
    let printed = step(
        "run with env",
        sandbox
            .run_with(
                r#"printf '%s|%s' "$CORRAL_CONFORMANCE_CREATE" "$CORRAL_CONFORMANCE_RUN""#,
                RunOptions { env, ..bounded() },
            )
            .await,
    )?;
    expect_output("environment", &printed, 0, b"from create|from run", b"")
}

/// A command that outlives its timeout fails with code `timeout`, and the
/// sandbox runs the next command as usual.
pub(crate) async fn command_timeout(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let result = sandbox
        .run_with(
            "sleep 60",
            RunOptions {
                timeout: Some(Duration::from_millis(300)),
                ..RunOptions::default()
            },
        )
        .await;
    let err = expect_code("sleep 60 with a 300 ms timeout", result, ErrorCode::Timeout)?;
    ensure(!err.message.contains('\n'), || {
        format!("the timeout error is not one line: {err}")
    })?;
    let after = step(
        "run after the timeout",
        sandbox.run_with("echo after", bounded()).await,
    )?;
    expect_output("echo after", &after, 0, b"after\n", b"")
}
