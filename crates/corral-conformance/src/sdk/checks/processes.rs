//! `processes`: background processes through `sandbox.processes()` —
//! start, logs with cursors, attach by name from a new handle, list, kill,
//! wait.

use std::sync::Arc;
use std::time::Duration;

use corral_backend::{Command, ExitStatus, StreamKind};
use corral_sdk::Sandbox;
use corral_sdk::processes::{LogCursor, ProcessState};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::{SdkScope, step};

/// How long output or an exit that should come at once may take (a
/// generous bound against hangs, never a measurement).
const BOUND: Duration = Duration::from_secs(30);

/// Polls the logs of process `name` until `stream` holds `needle`.
async fn logs_until(
    sandbox: &Sandbox,
    name: &str,
    stream: StreamKind,
    needle: &str,
) -> Result<(), Failure> {
    let deadline = tokio::time::Instant::now() + BOUND;
    let mut seen = String::new();
    let mut cursor = LogCursor::default();
    loop {
        let logs = step(
            &format!("processes.logs {name}"),
            sandbox.processes().logs(name, cursor).await,
        )?;
        seen.push_str(&logs.text(stream));
        cursor = logs.next;
        if seen.contains(needle) {
            return Ok(());
        }
        if logs.ended || tokio::time::Instant::now() >= deadline {
            return Err(Failure::new(format_args!(
                "processes.logs {name}: no {needle:?} on {stream:?} ({}), got {}",
                if logs.ended {
                    "the process ended"
                } else {
                    "still running after 30 s"
                },
                shown(seen.as_bytes())
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A process that ends by itself reports its code and output; a
/// long-running one is found by name from another handle, listed, killed
/// through that handle, and waited for.
pub(crate) async fn processes(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let procs = sandbox.processes();

    let _ = step(
        "processes.start conformance-exit",
        procs
            .start(
                "conformance-exit",
                Command::shell("echo done; echo warned >&2; exit 4")
                    .expect("a fixed, valid command"),
            )
            .await,
    )?;
    let status = step(
        "processes.wait conformance-exit",
        procs.wait("conformance-exit", BOUND).await,
    )?;
    ensure(status == ExitStatus::Code(4), || {
        format!("processes.wait conformance-exit: {status:?}, expected exit code 4")
    })?;
    let logs = step(
        "processes.logs conformance-exit",
        procs.logs("conformance-exit", LogCursor::default()).await,
    )?;
    ensure(
        logs.ended
            && logs.text(StreamKind::Stdout) == "done\n"
            && logs.text(StreamKind::Stderr) == "warned\n",
        || {
            format!(
                "processes.logs conformance-exit: ended {} stdout {:?} stderr {:?}, expected done and warned",
                logs.ended,
                logs.text(StreamKind::Stdout),
                logs.text(StreamKind::Stderr)
            )
        },
    )?;

    let rest = step(
        "processes.logs conformance-exit from a cursor",
        procs
            .logs(
                "conformance-exit",
                LogCursor {
                    stdout: 2,
                    stderr: 0,
                },
            )
            .await,
    )?;
    ensure(
        rest.text(StreamKind::Stdout) == "ne\n" && rest.text(StreamKind::Stderr) == "warned\n",
        || {
            format!(
                "processes.logs from stdout offset 2: stdout {:?} stderr {:?}, expected \"ne\\n\" and \"warned\\n\"",
                rest.text(StreamKind::Stdout),
                rest.text(StreamKind::Stderr)
            )
        },
    )?;
    let nothing = step(
        "processes.logs conformance-exit from its end",
        procs.logs("conformance-exit", logs.next).await,
    )?;
    ensure(nothing.chunks.iter().all(|c| c.data.is_empty()), || {
        format!(
            "processes.logs from the end cursor repeated output: {:?}",
            nothing.text(StreamKind::Stdout)
        )
    })?;

    let name = "conformance-server";
    let _ = step(
        "processes.start conformance-server",
        procs
            .start(
                name,
                Command::shell("echo serving; sleep 120").expect("a fixed, valid command"),
            )
            .await,
    )?;
    logs_until(&sandbox, name, StreamKind::Stdout, "serving\n").await?;

    let other = step(
        "connect (a new handle)",
        Sandbox::connect(Arc::clone(scope.backend()), &sandbox.locator()).await,
    )?;
    let attached = step(
        "processes.attach from a new handle",
        other.processes().attach(name).await,
    )?;
    let info = step("status (attached)", attached.status().await)?;
    ensure(info.state == ProcessState::Running, || {
        format!("the attached {name}: {:?}, expected running", info.state)
    })?;
    let listed = step("processes.list", other.processes().list().await)?;
    ensure(listed.iter().any(|p| p.name == name), || {
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        format!("processes.list: {names:?} lacks {name}")
    })?;
    let whole = step("logs (attached)", attached.logs(LogCursor::default()).await)?;
    ensure(whole.text(StreamKind::Stdout) == "serving\n", || {
        format!(
            "the attached {name}'s logs: {:?}, expected \"serving\\n\"",
            whole.text(StreamKind::Stdout)
        )
    })?;

    let killed = step("kill (attached)", attached.kill().await)?;
    ensure(!killed.is_running(), || {
        format!("kill {name}: still {killed:?}")
    })?;
    let status = step(
        &format!("processes.wait {name}"),
        procs.wait(name, BOUND).await,
    )?;
    ensure(matches!(status, ExitStatus::Signal(_)), || {
        format!("processes.wait {name} after kill: {status:?}, expected death by a signal")
    })
}
