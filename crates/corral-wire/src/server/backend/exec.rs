//! `exec` over the wire: the response is a stream of newline-delimited
//! JSON [`ExecFrame`]s — `started` with the run's id, the output chunks in
//! arrival order, then `outcome` or `error`. The run is aborted (its
//! process group killed by the backend) when the client asks through
//! `abort_run` or when the response is dropped because its connection
//! went away; the `error` line of an aborted or timed-out run is written
//! only after the backend settled, that is after the group is dead.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use corral_backend::{
    Backend, BackendError, CancellationToken, ExecError, ExecRequest, OutputSink, StreamKind,
};
use corral_contract::Octets;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

use super::super::http::Reply;
use crate::protocol::backend::{ExecBody, ExecFrame};
use crate::protocol::{CONTRACT_REVISION, REVISION_HEADER};

/// The streaming runs in flight, by id, for `abort_run`.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    next: AtomicU64,
    live: Mutex<HashMap<u64, CancellationToken>>,
}

impl Runs {
    fn insert(&self, token: CancellationToken) -> u64 {
        let run = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.lock().insert(run, token);
        run
    }

    fn remove(&self, run: u64) {
        self.lock().remove(&run);
    }

    /// Aborts `run`; nothing when it already ended (an abort that crossed
    /// the run's end is not an error).
    pub(crate) fn abort(&self, run: u64) {
        if let Some(token) = self.lock().get(&run) {
            token.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancellationToken>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn line(frame: &ExecFrame) -> Bytes {
    let mut text = serde_json::to_vec(frame).unwrap_or_default();
    text.push(b'\n');
    Bytes::from(text)
}

/// The most output the server queues for a client that reads more slowly
/// than the command writes; past it the run is aborted and ends with a
/// `quota` error — never unbounded memory, never a silent gap.
pub(crate) const MAX_QUEUED_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// Sends each chunk down the response as it arrives.
struct FrameSink {
    frames: mpsc::UnboundedSender<Bytes>,
    /// Bytes queued and not yet taken by the response.
    queued: Arc<AtomicUsize>,
    /// Set when the queue overflowed; the run is then aborted.
    overflowed: Arc<AtomicBool>,
    abort: CancellationToken,
    /// [`MAX_QUEUED_OUTPUT_BYTES`], but for tests.
    limit: usize,
}

impl OutputSink for FrameSink {
    fn chunk(&mut self, stream: StreamKind, bytes: &[u8]) {
        if self.overflowed.load(Ordering::Relaxed) {
            return;
        }
        let frame = line(&ExecFrame::Output {
            stream,
            bytes: Octets::new(bytes),
        });
        if self.queued.load(Ordering::Relaxed) + frame.len() > self.limit {
            self.overflowed.store(true, Ordering::Relaxed);
            self.abort.cancel();
            return;
        }
        queue(&self.frames, &self.queued, frame);
    }
}

/// Queues one frame, counted until the response takes it. A closed channel
/// means the client is gone; the drop guard has cancelled the run already.
fn queue(frames: &mpsc::UnboundedSender<Bytes>, queued: &AtomicUsize, frame: Bytes) {
    queued.fetch_add(frame.len(), Ordering::Relaxed);
    if frames.send(frame).is_err() {
        queued.store(0, Ordering::Relaxed);
    }
}

/// The response body: the frames as they come; dropping it aborts the run.
struct FrameStream {
    frames: mpsc::UnboundedReceiver<Bytes>,
    queued: Arc<AtomicUsize>,
    _abort_on_drop: DropGuard,
}

impl hyper::body::Body for FrameStream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.frames.poll_recv(cx);
        if let Poll::Ready(Some(bytes)) = &next {
            self.queued.fetch_sub(bytes.len(), Ordering::Relaxed);
        }
        next.map(|next| next.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Starts the run and answers with its stream.
pub(super) fn start(backend: &Arc<dyn Backend>, runs: &Arc<Runs>, body: ExecBody) -> Reply {
    let token = CancellationToken::new();
    let run = runs.insert(token.clone());
    let (frames, receiver) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let overflowed = Arc::new(AtomicBool::new(false));
    queue(&frames, &queued, line(&ExecFrame::Started { run }));
    // The paths are made sandbox paths here, at the wire's edge; a
    // malformed one is the run's one error frame, as any refusal is.
    let typed = |field: &str, raw: Option<String>| {
        raw.as_deref()
            .map(|raw| corral_backend::sandbox_path(field, raw))
            .transpose()
    };
    let request = (|| -> Result<ExecRequest, BackendError> {
        Ok(ExecRequest {
            command: body.command,
            cwd: typed("cwd", body.cwd)?,
            env: body.env,
            stdin: body.stdin.map(Octets::into_vec),
            timeout: body.timeout_ms.map(Duration::from_millis),
            abort: Some(token.clone()),
            activity_path: typed("activity_path", body.activity_path)?,
            run_as: body.run_as,
        })
    })();
    let backend = Arc::clone(backend);
    let runs = Arc::clone(runs);
    let id = body.id;
    let queued_by_sink = Arc::clone(&queued);
    let token_for_sink = token.clone();
    tokio::spawn(async move {
        let mut sink = FrameSink {
            frames: frames.clone(),
            queued: Arc::clone(&queued_by_sink),
            overflowed: Arc::clone(&overflowed),
            abort: token_for_sink,
            limit: MAX_QUEUED_OUTPUT_BYTES,
        };
        let result = match request {
            Ok(request) => backend.exec(&id, request, &mut sink).await,
            Err(refused) => Err(refused),
        };
        let last = if overflowed.load(Ordering::Relaxed) {
            ExecFrame::Error(
                ExecError::OutputOverrun {
                    bound: MAX_QUEUED_OUTPUT_BYTES as u64,
                }
                .into(),
            )
        } else {
            match result {
                Ok(outcome) => ExecFrame::Outcome(outcome),
                Err(error) => ExecFrame::Error(error),
            }
        };
        runs.remove(run);
        queue(&frames, &queued_by_sink, line(&last));
    });
    let stream = FrameStream {
        frames: receiver,
        queued,
        _abort_on_drop: token.drop_guard(),
    };
    let mut response = Response::new(stream.boxed());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    headers.insert(REVISION_HEADER, HeaderValue::from_static(CONTRACT_REVISION));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(limit: usize) -> (FrameSink, FrameStream) {
        let (frames, receiver) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let abort = CancellationToken::new();
        let sink = FrameSink {
            frames,
            queued: Arc::clone(&queued),
            overflowed: Arc::new(AtomicBool::new(false)),
            abort: abort.clone(),
            limit,
        };
        let stream = FrameStream {
            frames: receiver,
            queued,
            _abort_on_drop: abort.drop_guard(),
        };
        (sink, stream)
    }

    // The client's falling behind is bounded: past the limit the run is
    // aborted (its group killed by the backend) and reported, never queued
    // without bound and never cut silently.
    #[tokio::test]
    async fn a_client_too_far_behind_aborts_the_run_instead_of_queueing_without_bound() {
        let (mut sink, mut stream) = sink(300);
        sink.chunk(StreamKind::Stdout, &[b'x'; 100]);
        assert!(!sink.overflowed.load(Ordering::Relaxed));
        // Reading frees the queue.
        let first = stream.frame().await.unwrap().unwrap();
        assert!(first.is_data());
        assert_eq!(sink.queued.load(Ordering::Relaxed), 0);
        sink.chunk(StreamKind::Stdout, &[b'x'; 100]);
        sink.chunk(StreamKind::Stdout, &[b'x'; 100]);
        assert!(sink.overflowed.load(Ordering::Relaxed));
        assert!(sink.abort.is_cancelled());
        // Nothing after the overflow is queued.
        let queued = sink.queued.load(Ordering::Relaxed);
        sink.chunk(StreamKind::Stderr, b"more");
        assert_eq!(sink.queued.load(Ordering::Relaxed), queued);
    }
}
