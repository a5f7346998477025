//! The `Stream` form of streaming: [`Sandbox::run_stream`] yields every
//! redacted output chunk as it arrives, then the result or the error.

use std::pin::Pin;
use std::task::{Context, Poll};

use corral_backend::{CancellationToken, ErrorCode, StreamKind};
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

use crate::Operation;
use crate::error::{Result, SandboxError};
use crate::output::OutputCallback;
use crate::run::{RunOptions, RunResult};
use crate::sandbox::Sandbox;
use crate::sh::IntoCommand;

/// One item of a [`RunStream`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEvent {
    /// A chunk of output (secrets redacted), in arrival order.
    Output {
        /// Which stream.
        stream: StreamKind,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The command ended on its own; always the last item.
    Finished(RunResult),
}

/// A running command as a [`futures_core::Stream`] of
/// `Result<RunEvent, SandboxError>`: output chunks, then one
/// [`RunEvent::Finished`] or one error, then the end.
///
/// Dropping the stream before its end aborts the command (its process tree
/// is killed). Chunks the consumer has not taken yet are buffered in memory;
/// the result still keeps at most the output cap.
#[derive(Debug)]
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Result<RunEvent>>,
    provider: String,
    _abort_on_drop: DropGuard,
}

impl RunStream {
    /// The next item; `None` after the last.
    pub async fn next(&mut self) -> Option<Result<RunEvent>> {
        self.rx.recv().await
    }

    /// Drains the stream and returns the result (chunks are discarded).
    pub async fn result(mut self) -> Result<RunResult> {
        while let Some(item) = self.next().await {
            if let RunEvent::Finished(result) = item? {
                return Ok(result);
            }
        }
        // The run task always sends a last item unless the runtime is
        // shutting down.
        Err(SandboxError::new(
            ErrorCode::Aborted,
            self.provider.clone(),
            Operation::Run,
            "the run ended without a result (its runtime shut down)",
        ))
    }
}

impl futures_core::Stream for RunStream {
    type Item = Result<RunEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Sandbox {
    /// Starts `command` and returns its output as a [`RunStream`]. The run
    /// is a task spawned on the current tokio runtime; called outside one,
    /// the stream yields one `invalid_input` error. `options.on_output`, if
    /// set, is called too.
    pub fn run_stream(&self, command: impl IntoCommand, options: RunOptions) -> RunStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let token = match &options.abort {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        let guard = token.clone().drop_guard();
        let mut options = options;
        options.abort = Some(token);
        let user_callback = options.on_output.take();
        let chunk_tx = tx.clone();
        options.on_output = Some(OutputCallback::new(move |stream, bytes| {
            if let Some(cb) = &user_callback {
                cb.call(stream, bytes);
            }
            let _ = chunk_tx.send(Ok(RunEvent::Output {
                stream,
                bytes: bytes.to_vec(),
            }));
        }));
        let command = command.into_command();
        let stream = RunStream {
            rx,
            provider: self.provider().to_string(),
            _abort_on_drop: guard,
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let _ = tx.send(Err(self.fail(
                ErrorCode::InvalidInput,
                Operation::Run,
                "run_stream needs a tokio runtime (call it from async code)",
            )));
            return stream;
        };
        let sandbox = self.clone();
        runtime.spawn(async move {
            let result = match command {
                Ok(command) => sandbox.run_with(command, options).await,
                Err(msg) => Err(sandbox.fail(ErrorCode::InvalidInput, Operation::Run, msg)),
            };
            // The receiver may be gone (the stream was dropped): nothing to tell.
            let _ = tx.send(result.map(RunEvent::Finished));
        });
        stream
    }
}
