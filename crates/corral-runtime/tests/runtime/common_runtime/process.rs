//! The fake's live process: in-memory streams, scripted exits, a destroy
//! that counts (or hangs), and evidence that can be told to lie.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use corral_contract::{
    BoxFuture, ByteSink, ByteSource, ControlSignal, LiveProcess, ProcessExit, SandboxError,
    SandboxProcessEvidence,
};

/// Which stream a process fails to hand over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdin.
    Input,
    /// stdout.
    Output,
    /// stderr.
    Error,
}

/// How the fake process's destroy behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DestroyMode {
    /// Settle at once.
    #[default]
    Settle,
    /// Never settle.
    Hang,
}

pub type EvidenceTamper = Arc<dyn Fn(&mut SandboxProcessEvidence) + Send + Sync>;

/// What the next opened process does.
#[derive(Clone, Default)]
pub struct ProcessScript {
    /// Rewrites the evidence.
    pub evidence: Option<EvidenceTamper>,
    /// A stream the process cannot produce.
    pub missing: Option<Stream>,
    /// Successive `wait` results (the last one repeats).
    pub exits: Vec<ProcessExit>,
    /// How `destroy` behaves.
    pub destroy: DestroyMode,
    /// The bytes `output` yields before EOF.
    pub output: Vec<u8>,
}

/// Counts shared with the test.
#[derive(Default)]
pub struct ProcessLog {
    pub destroys_invoked: AtomicUsize,
    pub destroys_completed: AtomicUsize,
    pub waits: AtomicUsize,
    pub input: Mutex<Vec<u8>>,
    pub input_closed: AtomicUsize,
}

pub struct FakeProcess {
    pub(crate) evidence: SandboxProcessEvidence,
    pub(crate) input: Option<Pin<Box<dyn ByteSink>>>,
    pub(crate) output: Option<Pin<Box<dyn ByteSource>>>,
    pub(crate) error: Option<Pin<Box<dyn ByteSource>>>,
    pub(crate) exits: Vec<ProcessExit>,
    pub(crate) destroy: DestroyMode,
    pub(crate) log: Arc<ProcessLog>,
}

impl FakeProcess {
    pub fn new(
        evidence: SandboxProcessEvidence,
        script: &ProcessScript,
        log: Arc<ProcessLog>,
    ) -> Self {
        let input: Pin<Box<dyn ByteSink>> = Box::pin(Sink { log: log.clone() });
        let output: Pin<Box<dyn ByteSource>> = Box::pin(Source {
            bytes: script.output.clone(),
        });
        let error: Pin<Box<dyn ByteSource>> = Box::pin(Source { bytes: Vec::new() });
        let missing = script.missing;
        Self {
            evidence,
            input: (missing != Some(Stream::Input)).then_some(input),
            output: (missing != Some(Stream::Output)).then_some(output),
            error: (missing != Some(Stream::Error)).then_some(error),
            exits: script.exits.clone(),
            destroy: script.destroy,
            log,
        }
    }
}

impl LiveProcess for FakeProcess {
    fn evidence(&self) -> &SandboxProcessEvidence {
        &self.evidence
    }

    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>> {
        self.input.take()
    }

    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.output.take()
    }

    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.error.take()
    }

    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        let n = self.log.waits.fetch_add(1, Ordering::SeqCst);
        let exit = self
            .exits
            .get(n)
            .or(self.exits.last())
            .copied()
            .unwrap_or(ProcessExit::Code(0u8.into()));
        Box::pin(std::future::ready(Ok(exit)))
    }

    fn signal(&self, _signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.log.destroys_invoked.fetch_add(1, Ordering::SeqCst);
            if self.destroy == DestroyMode::Hang {
                std::future::pending::<()>().await;
            }
            self.log.destroys_completed.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

struct Sink {
    log: Arc<ProcessLog>,
}

impl ByteSink for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, SandboxError>> {
        self.log.input.lock().unwrap().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        self.log.input_closed.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(Ok(()))
    }
}

struct Source {
    bytes: Vec<u8>,
}

impl ByteSource for Source {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let n = buf.len().min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes.drain(..n);
        Poll::Ready(Ok(n))
    }
}
