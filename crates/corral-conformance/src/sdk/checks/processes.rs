//! `processes`: background processes — start, output, input, kill, wait.

use std::time::Duration;

use corral_backend::{Command, ExitStatus, LiveProcess, ProcessSpec};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::failure::{Failure, ensure, shown};
use crate::sdk::scope::SdkScope;

/// How long to wait for output that should come at once (a generous
/// bound against hangs, never a measurement).
const OUTPUT_BOUND: Duration = Duration::from_secs(30);

/// Reads `stream` until its bytes contain `needle`; fails at EOF or after
/// [`OUTPUT_BOUND`].
async fn read_until(
    what: &str,
    stream: &mut (dyn AsyncRead + Send + Unpin),
    needle: &[u8],
) -> Result<Vec<u8>, Failure> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + OUTPUT_BOUND;
    while !seen.windows(needle.len()).any(|w| w == needle) {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .map_err(|_| {
                Failure::new(format_args!(
                    "{what}: no {} within {} s, got {}",
                    shown(needle),
                    OUTPUT_BOUND.as_secs(),
                    shown(&seen)
                ))
            })?
            .map_err(|e| Failure::step(format_args!("{what}: reading output"), e))?;
        if n == 0 {
            return Err(Failure::new(format_args!(
                "{what}: output ended before {}: {}",
                shown(needle),
                shown(&seen)
            )));
        }
        seen.extend_from_slice(&buf[..n]);
    }
    Ok(seen)
}

/// A process that ends by itself reports its exit code and output; a
/// long-running one reads its input, answers, and is killed.
pub(crate) async fn processes(scope: &mut SdkScope) -> Result<(), Failure> {
    let sandbox = scope.sandbox().await?;
    let Some(ops) = sandbox.backend().process_ops() else {
        return Err(Failure::new(
            "the backend does not declare start_process; declare `processes` unsupported",
        ));
    };
    let spec = |script: &str| ProcessSpec {
        command: Command::shell(script),
        cwd: None,
        env: Default::default(),
    };

    let LiveProcess {
        mut stdout,
        control,
        ..
    } = ops
        .start_process(sandbox.id(), spec("echo done; exit 4"))
        .await
        .map_err(|e| Failure::step("start_process (exits 4)", e))?;
    read_until("the process exiting 4", &mut stdout, b"done\n").await?;
    let status = tokio::time::timeout(OUTPUT_BOUND, control.wait())
        .await
        .map_err(|_| Failure::new("wait: the process exiting 4 did not end"))?
        .map_err(|e| Failure::step("wait", e))?;
    ensure(status == ExitStatus::Code(4), || {
        format!("wait: {status:?}, expected exit code 4")
    })?;

    let LiveProcess {
        mut stdin,
        mut stdout,
        control,
        ..
    } = ops
        .start_process(
            sandbox.id(),
            spec("echo started; read line; echo \"got:$line\"; sleep 300"),
        )
        .await
        .map_err(|e| Failure::step("start_process (long-running)", e))?;
    read_until("the long-running process", &mut stdout, b"started\n").await?;
    stdin
        .write_all(b"hello\n")
        .await
        .map_err(|e| Failure::step("writing to the process's stdin", e))?;
    stdin
        .flush()
        .await
        .map_err(|e| Failure::step("writing to the process's stdin", e))?;
    read_until("the long-running process", &mut stdout, b"got:hello\n").await?;
    control.kill().await.map_err(|e| Failure::step("kill", e))?;
    let status = tokio::time::timeout(OUTPUT_BOUND, control.wait())
        .await
        .map_err(|_| Failure::new("wait: the killed process did not end"))?
        .map_err(|e| Failure::step("wait (after kill)", e))?;
    ensure(matches!(status, ExitStatus::Signal(_)), || {
        format!("wait after kill: {status:?}, expected death by a signal")
    })
}
