//! A linux exec as the one settle machine ([`corral_backend::settle`])
//! drives it: its output pipes, its control connection and its stdin, all
//! on the runtime's reactor and all polled from [`Run::next`], so an exec
//! starts no thread and a chunk goes from the pipe straight to the sink.
//!
//! Nothing is read ahead of the sink: a pipe is read only while the
//! settle machine asks for the next event, so a slow sink slows the
//! command and an output flood never grows memory beyond one chunk. The
//! bytes for stdin are written as the pipe takes them, while the output is
//! read, so a command that echoes its input never deadlocks against the
//! host; the pipe is closed once they are all written (the command sees
//! EOF), or when the command closed its end first (its business, not an
//! error of the run).

use std::io;
use std::os::unix::net::UnixStream;

use corral_backend::settle::{Run, RunEvent};
use corral_backend::{Result, StreamKind};
use tokio::net::unix::pipe;

use crate::control_reader::ControlReader;
use crate::protocol::{self, Reply, Request};

/// Bytes asked of an output pipe per read: one chunk for the sink.
const READ_CHUNK: usize = 64 * 1024;

/// What one source of an exec produced.
#[derive(Debug)]
pub enum Event {
    /// A chunk of one output pipe.
    Out(StreamKind, Vec<u8>),
    /// One output pipe reached its end.
    Eof,
    /// A frame of the control connection; `None` when the connection
    /// ended (it is then read no more).
    Control(Option<Reply>),
}

/// How PID 1 reported a command's end: its exit code, or the signal that
/// killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal, when one killed it.
    pub signal: Option<i32>,
}

/// One event (`None`: every source has ended) as the settle machine
/// expects it.
pub fn run_event(event: Option<Event>) -> RunEvent<Exit> {
    match event {
        Some(Event::Out(kind, bytes)) => RunEvent::Output(kind, bytes),
        Some(Event::Eof) => RunEvent::Closed,
        Some(Event::Control(Some(Reply::Exited { code, signal }))) => {
            RunEvent::Exited(Exit { code, signal })
        }
        // PID 1 said something else than `Exited`, or its connection ended.
        Some(Event::Control(_)) => RunEvent::Lost,
        None => RunEvent::Exhausted,
    }
}

/// The bytes still to write to a command's stdin.
#[derive(Debug)]
pub struct StdinFeed {
    pipe: pipe::Sender,
    bytes: Vec<u8>,
    written: usize,
}

impl StdinFeed {
    /// Writes `bytes` to `pipe`, then closes it.
    pub fn new(pipe: pipe::Sender, bytes: Vec<u8>) -> Self {
        StdinFeed {
            pipe,
            bytes,
            written: 0,
        }
    }
}

/// The sources of a running exec, each `None` once it has ended.
#[derive(Debug)]
pub struct Sources {
    /// The read end of stdout.
    pub stdout: Option<pipe::Receiver>,
    /// The read end of stderr.
    pub stderr: Option<pipe::Receiver>,
    /// The frames of the control connection.
    pub control: Option<ControlReader>,
    /// What is left to write to stdin.
    pub stdin: Option<StdinFeed>,
}

/// A running exec: its sources, and a writer on its control connection,
/// on which a kill is asked of PID 1.
#[derive(Debug)]
pub struct LinuxRun {
    sources: Sources,
    control: UnixStream,
}

impl LinuxRun {
    /// The run reading `sources`, controlled through `control` (a clone
    /// of the connection its control reader reads).
    pub fn new(sources: Sources, control: UnixStream) -> Self {
        LinuxRun { sources, control }
    }

    /// The next event of any source, or `None` once every one has ended.
    /// Cancel-safe: each source's future holds no bytes it took (a pipe is
    /// read only once it is ready, the control reader keeps what it read,
    /// stdin counts what it wrote), so a dropped call loses nothing.
    async fn next_event(&mut self) -> Option<Event> {
        let s = &mut self.sources;
        loop {
            if s.stdout.is_none() && s.stderr.is_none() && s.control.is_none() {
                // Stdin alone produces no event: it ends with the run.
                return None;
            }
            tokio::select! {
                chunk = read_chunk(&mut s.stdout) => {
                    return Some(output(&mut s.stdout, StreamKind::Stdout, chunk));
                }
                chunk = read_chunk(&mut s.stderr) => {
                    return Some(output(&mut s.stderr, StreamKind::Stderr, chunk));
                }
                frame = next_frame(&mut s.control) => {
                    if frame.is_none() {
                        s.control = None;
                    }
                    return Some(Event::Control(frame));
                }
                () = feed(&mut s.stdin) => s.stdin = None,
            }
        }
    }
}

/// The event of a read of an output pipe; an end (or a failed read, which
/// ends the pipe as well) closes it.
fn output(pipe: &mut Option<pipe::Receiver>, kind: StreamKind, chunk: Option<Vec<u8>>) -> Event {
    match chunk {
        Some(bytes) => Event::Out(kind, bytes),
        None => {
            *pipe = None;
            Event::Eof
        }
    }
}

/// Waits until `pipe` has bytes and takes up to one chunk of them; `None`
/// at its end. Pending forever once the pipe is gone.
async fn read_chunk(pipe: &mut Option<pipe::Receiver>) -> Option<Vec<u8>> {
    let Some(pipe) = pipe.as_mut() else {
        return std::future::pending().await;
    };
    loop {
        if pipe.readable().await.is_err() {
            return None;
        }
        let mut chunk = Vec::with_capacity(READ_CHUNK);
        match pipe.try_read_buf(&mut chunk) {
            Ok(0) => return None,
            Ok(_) => return Some(chunk),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// The next frame of the control connection; `None` when it ended (or
/// broke: PID 1 is then gone for this run). Pending forever once it is.
async fn next_frame(control: &mut Option<ControlReader>) -> Option<Reply> {
    match control.as_mut() {
        Some(reader) => reader.next::<Reply>().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// Writes what is left for stdin as the pipe takes it; returns when all
/// is written or the command closed its end. Pending forever without a
/// feed.
async fn feed(stdin: &mut Option<StdinFeed>) {
    let Some(feed) = stdin.as_mut() else {
        return std::future::pending().await;
    };
    while feed.written < feed.bytes.len() {
        if feed.pipe.writable().await.is_err() {
            return;
        }
        match feed.pipe.try_write(&feed.bytes[feed.written..]) {
            Ok(n) => feed.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A command that exits without reading its stdin closes the
            // pipe (EPIPE): that is its business, not an error of the run.
            Err(_) => return,
        }
    }
}

impl Run for LinuxRun {
    type Exit = Exit;

    async fn next(&mut self) -> RunEvent<Exit> {
        run_event(self.next_event().await)
    }

    fn kill(&mut self) -> Result<()> {
        let kill = Request::Signal {
            signal: libc::SIGKILL,
            group: true,
        };
        // A connection that cannot be written is one PID 1 has left: its
        // reader then reports the end, which confirms the kill.
        let _ = protocol::write_frame(&mut self.control, &kill);
        Ok(())
    }
}

#[cfg(test)]
#[path = "exec_run_tests.rs"]
mod tests;
