//! A live process whose evidence may lie, and whose teardown is recorded
//! (and may hang).

use std::pin::Pin;
use std::sync::Arc;

use corral_contract::{
    BoxFuture, ByteSink, ByteSource, ControlSignal, LiveProcess, ProcessExit, SandboxError,
    SandboxProcessEvidence,
};

use super::ledger::{HANG, Ledger};

/// Wraps the inner provider's live process: streams, `wait` and `signal`
/// pass through; `evidence` is the (possibly corrupted) copy the liar made;
/// `destroy` is recorded, optionally hangs, then destroys the real process.
pub struct LyingProcess {
    inner: Box<dyn LiveProcess>,
    evidence: SandboxProcessEvidence,
    ledger: Arc<Ledger>,
    destroy_hangs: bool,
}

impl LyingProcess {
    /// Wraps `inner`, presenting `evidence` instead of its own.
    pub fn new(
        inner: Box<dyn LiveProcess>,
        evidence: SandboxProcessEvidence,
        ledger: Arc<Ledger>,
        destroy_hangs: bool,
    ) -> Self {
        Self {
            inner,
            evidence,
            ledger,
            destroy_hangs,
        }
    }
}

impl LiveProcess for LyingProcess {
    fn evidence(&self) -> &SandboxProcessEvidence {
        &self.evidence
    }

    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>> {
        self.inner.take_input()
    }

    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.inner.take_output()
    }

    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.inner.take_error()
    }

    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        self.inner.wait()
    }

    fn signal(&self, signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.inner.signal(signal)
    }

    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.ledger.record_process_destroy();
        Box::pin(async move {
            if self.destroy_hangs {
                tokio::time::sleep(HANG).await;
            }
            self.inner.destroy().await
        })
    }
}
