//! Live processes: the optional `start_process` primitive, and the stdio
//! shape the contract's `openProcess` is built on.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use corral_contract::Environment;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::command::Command;
use crate::error::Result;
use crate::exec::{ExitStatus, RunAs};
use crate::path::SandboxPath;
use crate::signal::ControlSignal;

/// What to start.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// What to run.
    pub command: Command,
    /// Working directory (absolute); `None` = the sandbox's home.
    pub cwd: Option<SandboxPath>,
    /// Variables added to the sandbox's environment.
    pub env: Environment,
    /// Whom the process runs as; `None` = the backend's default, root.
    pub run_as: Option<RunAs>,
}

impl ProcessSpec {
    /// A process running `command` with nothing else set (the sandbox's
    /// home, its environment, its default user), as [`crate::ExecRequest::new`].
    pub fn new(command: Command) -> Self {
        ProcessSpec {
            command,
            cwd: None,
            env: Environment::new(),
            run_as: None,
        }
    }
}

/// Control of a live process, shareable between tasks.
#[async_trait]
pub trait ProcessControl: Send + Sync {
    /// The process id as the backend sees it, where it has one.
    fn pid(&self) -> Option<u32>;

    /// Settles once, when the process has exited; every later call returns
    /// the same status at once.
    async fn wait(&self) -> Result<ExitStatus>;

    /// Delivers one control signal to the process's group.
    async fn signal(&self, signal: ControlSignal) -> Result<()>;

    /// Kills the whole process group and reaps it. Idempotent; bounded.
    async fn kill(&self) -> Result<()>;
}

/// A started process: a writable stdin with half-close (`shutdown`), two
/// readable streams with a real EOF, and its control. (The contract's
/// `LiveProcess` is the trait a provider's `openProcess` answers with; the
/// adapter builds one over this.)
pub struct StartedProcess {
    /// Standard input; `shutdown()` closes it (the child sees EOF).
    pub stdin: Pin<Box<dyn AsyncWrite + Send>>,
    /// Standard output, ending in EOF when the process and its group closed it.
    pub stdout: Pin<Box<dyn AsyncRead + Send>>,
    /// Standard error, likewise.
    pub stderr: Pin<Box<dyn AsyncRead + Send>>,
    /// Wait, signal, kill.
    pub control: Arc<dyn ProcessControl>,
}

impl std::fmt::Debug for StartedProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedProcess")
            .field("pid", &self.control.pid())
            .finish_non_exhaustive()
    }
}

/// A process's stdin for [`StartedProcess::stdin`]: `shutdown()` flushes, then
/// drops the inner writer, closing the pipe so the process sees EOF (the
/// `shutdown` of tokio's `ChildStdin` and `File` only flushes). Writing
/// after that is `BrokenPipe`; flushing and shutting down again are no-ops.
#[derive(Debug)]
pub struct ClosingStdin<W>(Option<W>);

impl<W> ClosingStdin<W> {
    /// A stdin writing to `pipe`; `None` is one already closed.
    pub fn new(pipe: Option<W>) -> Self {
        ClosingStdin(pipe)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for ClosingStdin<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.0.as_mut() {
            Some(w) => Pin::new(w).poll_write(cx, buf),
            None => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(w) => Pin::new(w).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(w) = self.0.as_mut() {
            match Pin::new(w).poll_flush(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => {
                    self.0 = None;
                    return Poll::Ready(r);
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// The optional `start_process` primitive.
#[async_trait]
pub trait ProcessOps: Send + Sync {
    /// Starts `spec` in sandbox `id` with live stdio.
    async fn start_process(&self, id: &str, spec: ProcessSpec) -> Result<StartedProcess>;
}

/// What to open a terminal on.
#[derive(Debug, Clone)]
pub struct TerminalSpec {
    /// The program; `None` = the sandbox's login shell.
    pub command: Option<Command>,
    /// Working directory (absolute); `None` = the default of whom it runs
    /// as (as [`ProcessSpec::cwd`]).
    pub cwd: Option<SandboxPath>,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// Variables added to the environment.
    pub env: Environment,
    /// Whom the program runs as; `None` = the backend's default, root.
    pub run_as: Option<RunAs>,
}

/// Control of an open terminal.
#[async_trait]
pub trait TerminalControl: ProcessControl {
    /// Changes the window size.
    async fn resize(&self, cols: u16, rows: u16) -> Result<()>;
}

/// An interactive terminal: one input, one merged output.
pub struct Terminal {
    /// Keystrokes.
    pub input: Pin<Box<dyn AsyncWrite + Send>>,
    /// What the terminal shows, ending in EOF when the program exits.
    pub output: Pin<Box<dyn AsyncRead + Send>>,
    /// Wait, signal, kill, resize.
    pub control: Arc<dyn TerminalControl>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal").finish_non_exhaustive()
    }
}

/// The optional `terminal` primitive.
#[async_trait]
pub trait TerminalOps: Send + Sync {
    /// Opens an interactive terminal in sandbox `id`.
    async fn open_terminal(&self, id: &str, spec: TerminalSpec) -> Result<Terminal>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn shutdown_closes_the_pipe_and_later_writes_break() {
        let (writer, mut reader) = tokio::io::duplex(64);
        let mut stdin = ClosingStdin::new(Some(writer));
        stdin.write_all(b"input").await.unwrap();
        stdin.shutdown().await.unwrap();
        // The inner writer is gone: the reader sees the bytes, then EOF.
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"input");
        let e = stdin.write_all(b"more").await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        stdin.flush().await.unwrap();
        stdin.shutdown().await.unwrap();

        let mut closed = ClosingStdin::<tokio::io::DuplexStream>::new(None);
        let e = closed.write_all(b"x").await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        closed.shutdown().await.unwrap();
    }
}
