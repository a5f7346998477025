//! A live process of a sandbox: its control, its input (stdin, or the
//! keystrokes of its terminal), its terminal if it runs on one, what it was
//! started with, and the task that drains its output into the stream of
//! the call that started it (and on, after that caller went away), and to
//! every `Connect` attached to it.
//!
//! A `Connect` sees what the process writes from the moment it attaches,
//! and its end; nothing from before is replayed (as envd, which forks its
//! output to subscribers as they come). Each attached stream holds at
//! most [`ATTACHED_DEPTH`] chunks: one that falls further behind loses
//! them and ends with `resource_exhausted`. A process nobody reads buffers
//! nothing.

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use corral_backend::{ExitStatus, ProcessControl, StartedProcess, Terminal, TerminalControl};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{Mutex, broadcast, mpsc};

use crate::error::{E2bError, E2bResult};
use crate::state::Record;

/// The chunks (of at most 32 KiB each) one attached stream may fall
/// behind before it loses them.
pub const ATTACHED_DEPTH: usize = 128;

/// One live process.
pub struct LiveEntry {
    /// Its pid.
    pub pid: u32,
    /// Its tag, if the caller gave one.
    pub tag: Option<String>,
    /// Its `ProcessConfig`, as `List` answers it.
    pub config: Value,
    /// Wait, signal, kill.
    pub control: Arc<dyn ProcessControl>,
    /// Its terminal's size control, when it runs on one (a `pty` process).
    pub terminal: Option<Arc<dyn TerminalControl>>,
    /// Its input: stdin, or the terminal's keystrokes; `None` once closed.
    pub stdin: Mutex<Option<Pin<Box<dyn AsyncWrite + Send>>>>,
    /// Its events, to every attached `Connect`.
    attached: broadcast::Sender<Event>,
}

/// The output streams of a started process, each with the event its bytes
/// become.
type Outputs = Vec<(Pin<Box<dyn AsyncRead + Send>>, fn(Bytes) -> Event)>;

/// What a started process hands the drain: a process with pipes (stdout
/// and stderr apart) or one on a terminal (one merged output, `pty`
/// events, and a size).
pub struct Streams {
    input: Pin<Box<dyn AsyncWrite + Send>>,
    outputs: Outputs,
    control: Arc<dyn ProcessControl>,
    terminal: Option<Arc<dyn TerminalControl>>,
}

impl Streams {
    /// Its control.
    pub fn control(&self) -> Arc<dyn ProcessControl> {
        Arc::clone(&self.control)
    }
}

impl From<StartedProcess> for Streams {
    fn from(p: StartedProcess) -> Self {
        Streams {
            input: p.stdin,
            outputs: vec![(p.stdout, Event::Stdout), (p.stderr, Event::Stderr)],
            control: p.control,
            terminal: None,
        }
    }
}

impl From<Terminal> for Streams {
    fn from(t: Terminal) -> Self {
        let control: Arc<dyn ProcessControl> = t.control.clone();
        Streams {
            input: t.input,
            outputs: vec![(t.output, Event::Pty)],
            control,
            terminal: Some(t.control),
        }
    }
}

impl LiveEntry {
    /// A stream of what the process does from now on. Taken while the
    /// entry is in its record's map (the lock held), it sees the end: the
    /// end is sent only after the entry leaves the map.
    pub fn attach(&self) -> Events {
        Events::Attached {
            pid: self.pid,
            rx: self.attached.subscribe(),
        }
    }
}

/// The events of one stream: those of the call that started the process,
/// or those of a `Connect` attached later.
#[derive(Debug)]
pub enum Events {
    /// The starting call's: every event, with backpressure.
    Owned(mpsc::Receiver<Event>),
    /// An attached `Connect`'s: from the moment it attached.
    Attached {
        /// The process.
        pid: u32,
        /// Its share of the process's events.
        rx: broadcast::Receiver<Event>,
    },
}

impl Events {
    /// The next event; `None` once there are no more.
    pub async fn next(&mut self) -> Option<E2bResult<Event>> {
        match self {
            Events::Owned(rx) => rx.recv().await.map(Ok),
            Events::Attached { pid, rx } => match rx.recv().await {
                Ok(event) => Some(Ok(event)),
                Err(broadcast::error::RecvError::Closed) => None,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    Some(Err(E2bError::FellBehind { pid: *pid, missed }))
                }
            },
        }
    }
}

impl std::fmt::Debug for LiveEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveEntry")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// What a process does, in order.
#[derive(Debug, Clone)]
pub enum Event {
    /// Bytes on stdout.
    Stdout(Bytes),
    /// Bytes on stderr.
    Stderr(Bytes),
    /// Bytes the terminal shows (a `pty` process's one output).
    Pty(Bytes),
    /// It ended.
    End(ExitStatus),
}

impl Event {
    /// The `ProcessEvent` JSON of this event.
    pub fn to_json(&self) -> Value {
        use corral_contract::base64_encode;
        match self {
            Event::Stdout(b) => json!({ "data": { "stdout": base64_encode(b) } }),
            Event::Stderr(b) => json!({ "data": { "stderr": base64_encode(b) } }),
            Event::Pty(b) => json!({ "data": { "pty": base64_encode(b) } }),
            Event::End(status) => json!({ "end": end_json(status) }),
        }
    }
}

/// envd's `EndEvent` of an exit status.
pub fn end_json(status: &ExitStatus) -> Value {
    match status {
        ExitStatus::Code(n) => {
            json!({ "exitCode": n, "exited": true, "status": format!("exit status {n}") })
        }
        ExitStatus::Signal(name) => json!({
            "exitCode": -1, "exited": false,
            "status": format!("signal: {}", name.as_str().trim_start_matches("SIG").to_lowercase()),
        }),
        ExitStatus::UnnamedSignal(n) => {
            json!({ "exitCode": -1, "exited": false, "status": format!("signal: {n}") })
        }
        ExitStatus::OomKilled => json!({
            "exitCode": 137, "exited": false, "status": "signal: killed", "error": "out of memory",
        }),
    }
}

async fn read_into(
    mut from: Pin<Box<dyn AsyncRead + Send>>,
    to: mpsc::Sender<Event>,
    make: fn(Bytes) -> Event,
) {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to
                    .send(make(Bytes::copy_from_slice(&buf[..n])))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Registers `process` under `pid` in `record` and drains it: events go
/// to the returned receiver while it is held, and are dropped after (the
/// process goes on: that is how background commands work). The entry is
/// removed once the process has ended, and then its end is sent. Its
/// input is closed at once unless `keep_stdin` (a terminal's always stays
/// open, as envd's: its EOF is a Ctrl-D typed into it).
pub fn spawn(
    record: &Arc<Record>,
    pid: u32,
    tag: Option<String>,
    config: Value,
    process: Streams,
    keep_stdin: bool,
) -> Events {
    let Streams {
        input,
        outputs,
        control,
        terminal,
    } = process;
    let keep_stdin = keep_stdin || terminal.is_some();
    let entry = Arc::new(LiveEntry {
        pid,
        tag,
        config,
        control: Arc::clone(&control),
        terminal,
        stdin: Mutex::new(Some(input)),
        attached: broadcast::channel(ATTACHED_DEPTH).0,
    });
    record.processes().insert(pid, Arc::clone(&entry));
    let (tx, rx) = mpsc::channel(64);
    let record = Arc::downgrade(record);
    tokio::spawn(async move {
        if !keep_stdin {
            close_stdin(&entry).await;
        }
        let (out_tx, mut out_rx) = mpsc::channel(64);
        for (output, make) in outputs {
            tokio::spawn(read_into(output, out_tx.clone(), make));
        }
        drop(out_tx);
        let mut primary = Some(tx);
        while let Some(event) = out_rx.recv().await {
            // No attached stream: nothing is kept.
            let _ = entry.attached.send(event.clone());
            if let Some(p) = &primary
                && p.send(event).await.is_err()
            {
                primary = None;
            }
        }
        let status = control.wait().await.unwrap_or(ExitStatus::Code(-1));
        if let Some(record) = record.upgrade() {
            record.processes().remove(&pid);
        }
        let _ = entry.attached.send(Event::End(status.clone()));
        if let Some(p) = &primary {
            let _ = p.send(Event::End(status)).await;
        }
    });
    Events::Owned(rx)
}

/// Closes a process's stdin (the process sees EOF). Idempotent.
pub async fn close_stdin(entry: &LiveEntry) {
    use tokio::io::AsyncWriteExt;
    let mut stdin = entry.stdin.lock().await;
    if let Some(mut w) = stdin.take() {
        let _ = w.shutdown().await;
    }
}
