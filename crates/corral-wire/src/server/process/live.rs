//! One live process on the server: what survives a lost socket. Its
//! output pumps keep every unacknowledged byte (at most the window per
//! stream) so that a `replay` can resend it; frames go to whichever socket
//! is attached, or nowhere while none is.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use corral_contract::{ByteSink, ByteSource, FailureReason, LiveProcess, ProcessExit};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

use super::{failed, text};
use crate::protocol::{
    DataFrame, Frame, MAX_DATA_FRAME_BYTES, REPLAY_WINDOW_BYTES, STDIN_WINDOW_BYTES, Stream,
};

/// The unacknowledged tail of one output stream.
#[derive(Default)]
pub(super) struct Retained {
    /// The offset of `bytes[0]`: everything before it was acknowledged.
    base: u64,
    bytes: VecDeque<u8>,
    /// The stream's total length, once it ended.
    eof: Option<u64>,
}

impl Retained {
    fn sent(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    fn ack(&mut self, offset: u64) {
        let upto = offset.clamp(self.base, self.sent());
        self.bytes
            .drain(..usize::try_from(upto - self.base).unwrap_or(0));
        self.base = upto;
    }

    /// The frames that resend everything from `from`, or `None` when `from`
    /// is outside what is retained.
    fn resend(&self, stream: Stream, from: u64) -> Option<Vec<Message>> {
        if from < self.base || from > self.sent() {
            return None;
        }
        let tail: Vec<u8> = self
            .bytes
            .iter()
            .skip(usize::try_from(from - self.base).ok()?)
            .copied()
            .collect();
        let mut frames: Vec<Message> = DataFrame::encode_chunks(stream, from, &tail)
            .map(Message::binary)
            .collect();
        if let Some(end) = self.eof {
            frames.push(text(&Frame::HalfClose {
                stream,
                offset: end,
            }));
        }
        Some(frames)
    }
}

/// What goes out, and to where.
#[derive(Default)]
pub(super) struct Outgoing {
    socket: Option<mpsc::UnboundedSender<Message>>,
    pub(super) stdout: Retained,
    pub(super) stderr: Retained,
    exit: Option<ProcessExit>,
    credit: u64,
}

impl Outgoing {
    fn send(&mut self, message: Message) {
        if let Some(socket) = &self.socket
            && socket.send(message).is_err()
        {
            self.socket = None;
        }
    }

    fn stream(&mut self, stream: Stream) -> &mut Retained {
        match stream {
            Stream::Stderr => &mut self.stderr,
            Stream::Stdout | Stream::Stdin => &mut self.stdout,
        }
    }
}

/// What the socket reader hands the stdin feeder.
pub(super) enum Stdin {
    Data(Vec<u8>),
    Close,
}

/// A live process and its streams' state.
pub(crate) struct Live {
    pub(super) process: Arc<dyn LiveProcess>,
    pub(super) key: u64,
    out: Mutex<Outgoing>,
    acked: [watch::Sender<u64>; 2],
    /// Stdin bytes received from the client.
    pub(super) received: AtomicU64,
    /// The stdin credit granted.
    pub(super) granted: AtomicU64,
    pub(super) stdin: mpsc::UnboundedSender<Stdin>,
    pub(super) stdin_open: std::sync::atomic::AtomicBool,
    tasks: Mutex<tokio::task::JoinSet<()>>,
    /// The attachment count: each socket attached bumps it, and the reader
    /// of an older socket stops when it changes (a `replay` took over).
    generation: watch::Sender<u64>,
}

impl Live {
    /// Starts the pumps, the feeder and the exit watch of `process`.
    pub(super) fn start(
        process: Arc<dyn LiveProcess>,
        key: u64,
        input: Pin<Box<dyn ByteSink>>,
        output: Pin<Box<dyn ByteSource>>,
        error: Pin<Box<dyn ByteSource>>,
    ) -> Arc<Self> {
        let (stdin, stdin_rx) = mpsc::unbounded_channel();
        let (stdout_acked, stdout_acks) = watch::channel(0u64);
        let (stderr_acked, stderr_acks) = watch::channel(0u64);
        let live = Arc::new(Self {
            process,
            key,
            out: Mutex::new(Outgoing {
                credit: STDIN_WINDOW_BYTES,
                ..Outgoing::default()
            }),
            acked: [stdout_acked, stderr_acked],
            received: AtomicU64::new(0),
            granted: AtomicU64::new(STDIN_WINDOW_BYTES),
            stdin,
            stdin_open: std::sync::atomic::AtomicBool::new(true),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
            generation: watch::channel(0).0,
        });
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(pump(Arc::clone(&live), output, Stream::Stdout, stdout_acks));
        tasks.spawn(pump(Arc::clone(&live), error, Stream::Stderr, stderr_acks));
        tasks.spawn(feed(Arc::clone(&live), input, stdin_rx));
        let watcher = Arc::clone(&live);
        tasks.spawn(async move {
            if let Ok(exit) = watcher.process.wait().await {
                let mut out = watcher.lock();
                out.exit = Some(exit);
                out.send(text(&Frame::Exit { exit }));
            }
        });
        *live.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
        live
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Outgoing> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends one frame to the attached socket, if any.
    pub(super) fn send(&self, message: Message) {
        self.lock().send(message);
    }

    /// The client acknowledged `stream` up to `offset`.
    pub(super) fn ack(&self, stream: Stream, offset: u64) {
        let mut out = self.lock();
        let retained = out.stream(stream);
        retained.ack(offset);
        let base = retained.base;
        let index = usize::from(stream == Stream::Stderr);
        self.acked[index].send_modify(|a| *a = (*a).max(base));
    }

    /// Attaches a socket. With `resume` (the client's stdout and stderr
    /// offsets) it first answers `resumed` and resends what follows them;
    /// `false` when an offset is outside what is retained.
    /// The current attachment and a receiver that sees the next one.
    pub(super) fn generation(&self) -> (u64, watch::Receiver<u64>) {
        let rx = self.generation.subscribe();
        let current = *rx.borrow();
        (current, rx)
    }

    pub(super) fn attach(
        &self,
        socket: mpsc::UnboundedSender<Message>,
        resume: Option<(u64, u64)>,
    ) -> bool {
        self.generation.send_modify(|g| *g += 1);
        let mut out = self.lock();
        let mut frames = Vec::new();
        if resume.is_none() {
            // The first socket. The pumps and the exit watch start with the
            // process, before it is attached, and what they sent until now
            // went nowhere: a fast command's output, its half-closes and
            // its exit. Send it now, under the lock, so nothing is lost and
            // nothing comes twice.
            let (stdout_base, stderr_base) = (out.stdout.base, out.stderr.base);
            if let Some(a) = out.stdout.resend(Stream::Stdout, stdout_base) {
                frames.extend(a);
            }
            if let Some(b) = out.stderr.resend(Stream::Stderr, stderr_base) {
                frames.extend(b);
            }
            if let Some(exit) = out.exit {
                frames.push(text(&Frame::Exit { exit }));
            }
        }
        if let Some((stdout, stderr)) = resume {
            frames.push(text(&Frame::Resumed {
                stdin_offset: self.received.load(Ordering::SeqCst),
            }));
            let (Some(a), Some(b)) = (
                out.stdout.resend(Stream::Stdout, stdout),
                out.stderr.resend(Stream::Stderr, stderr),
            ) else {
                return false;
            };
            frames.extend(a);
            frames.extend(b);
            frames.push(text(&Frame::Credit { offset: out.credit }));
            if let Some(exit) = out.exit {
                frames.push(text(&Frame::Exit { exit }));
            }
        }
        out.socket = Some(socket);
        for frame in frames {
            out.send(frame);
        }
        true
    }

    /// Detaches the socket (frames are kept or dropped until the next).
    pub(super) fn detach(&self) {
        self.lock().socket = None;
    }

    /// Detaches the socket of attachment `generation`, unless a newer one
    /// is attached already.
    pub(super) fn detach_if(&self, generation: u64) {
        let mut out = self.lock();
        if *self.generation.borrow() == generation {
            out.socket = None;
        }
    }

    /// Destroys the process and stops its tasks.
    pub(crate) async fn end(&self) {
        let _ = self.process.destroy().await;
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        let mut tasks = tasks;
        tasks.shutdown().await;
        self.detach();
    }
}

/// Sends one output stream, never more than the window beyond what the
/// client acknowledged, keeping what is unacknowledged; then its
/// `half_close`.
async fn pump(
    live: Arc<Live>,
    mut source: Pin<Box<dyn ByteSource>>,
    stream: Stream,
    mut acked: watch::Receiver<u64>,
) {
    let mut offset: u64 = 0;
    let mut buf = vec![0u8; MAX_DATA_FRAME_BYTES];
    loop {
        let Ok(ack) = acked
            .wait_for(|a| offset.saturating_sub(*a) < REPLAY_WINDOW_BYTES)
            .await
            .map(|a| *a)
        else {
            return;
        };
        let room = REPLAY_WINDOW_BYTES - offset.saturating_sub(ack);
        let take = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let read = poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf[..take])).await;
        let mut out = live.lock();
        match read {
            Ok(0) | Err(_) => {
                out.stream(stream).eof = Some(offset);
                out.send(text(&Frame::HalfClose { stream, offset }));
                // stderr is diagnostic; a failed stdout read ends the
                // session after its EOF.
                if read.is_err() && stream == Stream::Stdout {
                    out.send(text(&Frame::Error {
                        error: failed(FailureReason::StreamClosed),
                    }));
                }
                return;
            }
            Ok(n) => {
                out.stream(stream).bytes.extend(&buf[..n]);
                out.send(Message::binary(DataFrame::encode_parts(
                    stream,
                    offset,
                    &buf[..n],
                )));
                offset += n as u64;
            }
        }
    }
}

/// Writes stdin into the process, granting credit as it is consumed.
async fn feed(
    live: Arc<Live>,
    mut sink: Pin<Box<dyn ByteSink>>,
    mut rx: mpsc::UnboundedReceiver<Stdin>,
) {
    let mut consumed: u64 = 0;
    let mut broken = false;
    while let Some(event) = rx.recv().await {
        match event {
            Stdin::Data(bytes) => {
                let mut rest = &bytes[..];
                while !broken && !rest.is_empty() {
                    match poll_fn(|cx| sink.as_mut().poll_write(cx, rest)).await {
                        Ok(0) | Err(_) => broken = true,
                        Ok(n) => rest = &rest[n..],
                    }
                }
                if !broken && poll_fn(|cx| sink.as_mut().poll_flush(cx)).await.is_err() {
                    broken = true;
                }
                // Bytes the process can no longer take are consumed all the
                // same (as a pipe whose reader exited): the credit window
                // must never stall the client.
                consumed += bytes.len() as u64;
                let offset = consumed + STDIN_WINDOW_BYTES;
                live.granted.store(offset, Ordering::SeqCst);
                let mut out = live.lock();
                out.credit = offset;
                out.send(text(&Frame::Credit { offset }));
            }
            Stdin::Close => {
                let _ = poll_fn(|cx| sink.as_mut().poll_close(cx)).await;
                return;
            }
        }
    }
}
