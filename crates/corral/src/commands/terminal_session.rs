//! `-it` and `corral shell`: a program on a terminal of the sandbox (the
//! `open_terminal` primitive), attached to the host's terminal in raw mode.
//!
//! Keystrokes go to the sandbox's terminal unchanged (Ctrl-C is 0x03 there,
//! and its line discipline interrupts the workload, not corral); what it
//! shows comes back as it comes; the host window's size is given at open
//! and again on every `SIGWINCH`. corral exits with the program's exit
//! code (128 + n for a signal), 124 after `--timeout`, 128 + n after a
//! caught ending signal (the program is killed). The host terminal's mode
//! is restored on each of these, on an error, and on a panic
//! ([`super::tty`]).

use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use corral_backend::{
    Command, Environment, ExecError, Terminal, TerminalControl, TerminalOps, TerminalSpec,
    TimeoutLimit,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::error::{CliError, CliResult};

use super::ending_signals::Ending;
use super::shared::interrupted;
use super::stdin_exec::elapsed;
use super::stdin_feed::StdinFeed;
use super::tty::HostTerminal;

/// How long what the program printed last may take to arrive after it
/// ended (a child it left behind may hold the terminal open).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// What to run on the terminal.
#[derive(Debug)]
pub struct TerminalProgram {
    /// The program.
    pub command: Command,
    /// Variables added to its environment.
    pub env: Environment,
    /// Kill it and exit 124 after this long.
    pub timeout: Option<Duration>,
    /// Whom it runs as (`run --user`); `None` = the backend's default, root.
    pub run_as: Option<corral_backend::RunAs>,
    /// Where it starts (`-w/--cwd`); `None` = the sandbox's home.
    pub cwd: Option<corral_backend::SandboxPath>,
}

/// Runs `program` on a new terminal of sandbox `id`, attached to `host`.
pub async fn attach(
    terminals: &dyn TerminalOps,
    host: &HostTerminal,
    id: &str,
    program: TerminalProgram,
    ending: &Ending,
) -> CliResult {
    if let Some(e) = interrupted(ending, " before the terminal opened") {
        return Err(e);
    }
    // Caught from before the size is read: no resize goes unseen.
    let resized = signal(SignalKind::window_change()).ok();
    let size = host.size();
    let Terminal {
        input,
        output,
        control,
    } = terminals
        .open_terminal(
            id,
            TerminalSpec {
                command: Some(program.command),
                cols: size.cols,
                rows: size.rows,
                env: program.env,
                run_as: program.run_as,
                cwd: program.cwd,
            },
        )
        .await?;
    let raw = match host.raw() {
        Ok(raw) => raw,
        Err(e) => {
            let _ = control.kill().await;
            return Err(e);
        }
    };
    let typing = tokio::spawn(type_into(input));
    let resizing = tokio::spawn(follow_resizes(resized, *host, Arc::clone(&control)));
    let mut showing = tokio::spawn(show(output));
    let settled = tokio::select! {
        status = control.wait() => Ok(status),
        () = ending.wait() => Err(interrupted(ending, "; the terminal's program was killed")
            .unwrap_or_else(|| CliError::failure("aborted", "interrupted"))),
        after = elapsed(program.timeout) => Err(CliError::from(
            corral_backend::BackendError::from(ExecError::TimedOut {
                after,
                limit: TimeoutLimit::Requested,
            }),
        )),
    };
    typing.abort();
    resizing.abort();
    if settled.is_err() {
        let _ = control.kill().await;
    }
    let last_shown = match tokio::time::timeout(OUTPUT_DRAIN, &mut showing).await {
        Ok(Ok(last)) => last,
        _ => {
            showing.abort();
            None
        }
    };
    drop(raw);
    let status = settled.and_then(|status| status.map_err(CliError::from));
    if status.is_err() && last_shown.is_some_and(|b| b != b'\n') {
        // The error line starts on a line of its own, not after a prompt.
        let _ = writeln!(std::io::stdout());
    }
    Ok(status?.shell_code())
}

/// Copies keystrokes to the terminal, each chunk as it is typed.
async fn type_into(mut input: Pin<Box<dyn AsyncWrite + Send>>) {
    let mut keys = StdinFeed::start();
    while let Some(chunk) = keys.next().await {
        if input.write_all(&chunk).await.is_err() || input.flush().await.is_err() {
            return;
        }
    }
}

/// Gives the terminal the host window's size on every `SIGWINCH`.
async fn follow_resizes(
    resized: Option<Signal>,
    host: HostTerminal,
    control: Arc<dyn TerminalControl>,
) {
    let Some(mut resized) = resized else {
        return;
    };
    while resized.recv().await.is_some() {
        let size = host.size();
        let _ = control.resize(size.cols, size.rows).await;
    }
}

/// Writes what the terminal shows to stdout until it ends; the last byte
/// shown, if any was.
async fn show(mut output: Pin<Box<dyn AsyncRead + Send>>) -> Option<u8> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut last = None;
    loop {
        match output.read(&mut buf).await {
            Ok(0) | Err(_) => return last,
            Ok(n) => {
                last = Some(buf[n - 1]);
                let mut stdout = std::io::stdout().lock();
                // A host terminal that is gone shows nothing; the program
                // still runs to its end.
                let _ = stdout.write_all(&buf[..n]).and_then(|()| stdout.flush());
            }
        }
    }
}
