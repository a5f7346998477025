//! This process's stdin as a stream of chunks, read by a thread of its
//! own, for the commands that forward it (`run -i`, `exec -i`, `run -it`,
//! `shell`).
//!
//! The thread waits for input with `poll` and a short timeout, so once
//! the feed is dropped it stops within one timeout without reading on: a
//! key typed after corral detached stays for the host's shell, and stdin
//! is never switched to non-blocking mode, which would change it for
//! every process sharing it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use tokio::sync::mpsc;

/// The most one read takes.
const CHUNK: usize = 64 * 1024;
/// Chunks read ahead of the consumer: stdin is read no faster than the
/// sandbox takes it.
const AHEAD: usize = 4;
/// How often the thread looks whether the feed was dropped.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Chunks of stdin, in order; `None` from [`StdinFeed::next`] is its end
/// (EOF or a read error).
#[derive(Debug)]
pub struct StdinFeed {
    chunks: mpsc::Receiver<Vec<u8>>,
    stop: Arc<AtomicBool>,
}

impl StdinFeed {
    /// Starts reading stdin.
    pub fn start() -> Self {
        let (tx, chunks) = mpsc::channel(AHEAD);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || read_until_end(&tx, &stopped));
        StdinFeed { chunks, stop }
    }

    /// The next chunk; `None` once stdin ended.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.chunks.recv().await
    }
}

impl Drop for StdinFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Reads stdin into `tx` until EOF, an error, or `stop`.
fn read_until_end(tx: &mpsc::Sender<Vec<u8>>, stop: &AtomicBool) {
    let stdin = rustix::stdio::stdin();
    let timeout = Timespec::try_from(STOP_CHECK).expect("a short timeout is a timespec");
    let mut buf = vec![0u8; CHUNK];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(Errno::INTR) => continue,
            Ok(_) => {}
            Err(_) => return,
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match rustix::io::read(stdin, &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tx.blocking_send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
            Err(Errno::INTR | Errno::AGAIN) => {}
            Err(_) => return,
        }
    }
}
