//! What a run does with each output chunk: redact it (holding back what a
//! chunk boundary leaves undecided), hand it to the caller's callback, and
//! keep it up to the output cap, counting what the cap dropped.

use std::sync::Arc;

use corral_backend::{OutputSink, StreamKind};

use crate::redact::{Redactor, StreamRedactor};

/// The callback form of streaming: called with every (redacted) chunk, in
/// arrival order, while the command runs. Cheap to clone.
#[derive(Clone)]
pub struct OutputCallback(Arc<ChunkFn>);

/// The function behind an [`OutputCallback`].
type ChunkFn = dyn Fn(StreamKind, &[u8]) + Send + Sync;

impl OutputCallback {
    /// Wraps `f`.
    pub fn new(f: impl Fn(StreamKind, &[u8]) + Send + Sync + 'static) -> OutputCallback {
        OutputCallback(Arc::new(f))
    }

    /// Calls the callback.
    pub fn call(&self, stream: StreamKind, bytes: &[u8]) {
        (self.0)(stream, bytes)
    }
}

impl std::fmt::Debug for OutputCallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputCallback(..)")
    }
}

/// One stream's kept bytes and what the cap dropped.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    pub(crate) bytes: Vec<u8>,
    pub(crate) dropped: u64,
}

impl Kept {
    fn keep(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len());
        let take = room.min(bytes.len());
        self.bytes.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }
}

/// The sink a run hands the backend.
pub(crate) struct RunSink {
    cap: usize,
    callback: Option<OutputCallback>,
    /// False when no secret is known: chunks then pass through uncopied.
    redacting: bool,
    redact_out: StreamRedactor,
    redact_err: StreamRedactor,
    pub(crate) stdout: Kept,
    pub(crate) stderr: Kept,
}

impl RunSink {
    pub(crate) fn new(redactor: &Redactor, cap: usize, callback: Option<OutputCallback>) -> Self {
        RunSink {
            cap,
            callback,
            redacting: !redactor.is_empty(),
            redact_out: redactor.stream(),
            redact_err: redactor.stream(),
            stdout: Kept::default(),
            stderr: Kept::default(),
        }
    }

    fn deliver(&mut self, stream: StreamKind, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(cb) = &self.callback {
            cb.call(stream, bytes);
        }
        match stream {
            StreamKind::Stdout => self.stdout.keep(bytes, self.cap),
            StreamKind::Stderr => self.stderr.keep(bytes, self.cap),
        }
    }

    /// Flushes what the redactors held back at the end of the streams.
    pub(crate) fn finish(&mut self) {
        let out = self.redact_out.finish();
        self.deliver(StreamKind::Stdout, &out);
        let err = self.redact_err.finish();
        self.deliver(StreamKind::Stderr, &err);
    }
}

impl OutputSink for RunSink {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        if !self.redacting {
            self.deliver(stream, bytes);
            return;
        }
        let decided = match stream {
            StreamKind::Stdout => self.redact_out.push(bytes),
            StreamKind::Stderr => self.redact_err.push(bytes),
        };
        self.deliver(stream, &decided);
    }
}
