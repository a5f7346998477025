//! The standard streams of simulated processes: where stdin comes from and
//! where stdout and stderr go (the exec's sink, a pipe, a file, a live
//! process's stream, nowhere).

use std::pin::Pin;
use std::sync::Arc;

use corral_backend::StreamKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

use crate::sandbox::Sandbox;
use crate::tree::FsError;

/// One chunk on its way to an exec's sink.
pub(crate) type Chunk = (StreamKind, Vec<u8>);

/// Chunks buffered in a shell pipe before the writer waits.
pub(crate) const PIPE_CHUNKS: usize = 16;

/// A shared writable stream.
pub(crate) type SharedWriter = Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>;

/// Where a process writes. Cloning duplicates the descriptor: a reader sees
/// EOF once every clone is gone.
#[derive(Clone)]
pub(crate) enum Output {
    /// `/dev/null`.
    Null,
    /// An exec's output channel, labelled with the stream it stands for.
    Chan(StreamKind, mpsc::Sender<Chunk>),
    /// The write end of a shell pipe.
    Pipe(mpsc::Sender<Vec<u8>>),
    /// A file opened for appending (after `>` truncated it).
    File(Arc<Sandbox>, Vec<String>),
    /// A live stream (a started process's stdout, a terminal).
    Writer(SharedWriter),
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Null => f.write_str("Null"),
            Output::Chan(k, _) => write!(f, "Chan({k:?})"),
            Output::Pipe(_) => f.write_str("Pipe"),
            Output::File(_, p) => write!(f, "File(/{})", p.join("/")),
            Output::Writer(_) => f.write_str("Writer"),
        }
    }
}

/// Why a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// The reader is gone (`EPIPE`; the writer dies of `SIGPIPE`).
    BrokenPipe,
    /// The file system refused (no space left).
    Fs(FsError),
}

impl Output {
    /// A live stream.
    pub(crate) fn writer(w: impl AsyncWrite + Send + 'static) -> Output {
        Output::Writer(Arc::new(Mutex::new(Box::pin(w))))
    }

    /// Writes all of `bytes`.
    pub(crate) async fn write(&self, bytes: &[u8]) -> Result<(), WriteError> {
        if bytes.is_empty() {
            return Ok(());
        }
        match self {
            Output::Null => Ok(()),
            Output::Chan(kind, tx) => tx
                .send((*kind, bytes.to_vec()))
                .await
                .map_err(|_| WriteError::BrokenPipe),
            Output::Pipe(tx) => tx
                .send(bytes.to_vec())
                .await
                .map_err(|_| WriteError::BrokenPipe),
            Output::File(sb, path) => match sb.write_file(path, bytes, None, true) {
                // Writing to a file that was removed meanwhile: the bytes
                // go to the unlinked inode, i.e. nowhere.
                Ok(()) | Err(FsError::NotFound) => Ok(()),
                Err(e) => Err(WriteError::Fs(e)),
            },
            Output::Writer(w) => {
                let mut w = w.lock().await;
                w.write_all(bytes)
                    .await
                    .map_err(|_| WriteError::BrokenPipe)?;
                w.flush().await.map_err(|_| WriteError::BrokenPipe)
            }
        }
    }
}

enum Source {
    Closed,
    Bytes(Vec<u8>),
    Pipe(mpsc::Receiver<Vec<u8>>),
    Reader(Pin<Box<dyn AsyncRead + Send>>),
}

struct InputState {
    src: Source,
    /// Bytes read from `src` but not consumed yet.
    pending: Vec<u8>,
    /// A terminal line ended in `\r`: drop a `\n` right after it.
    skip_lf: bool,
}

/// Where a process reads from. Clones share the stream (and its position).
#[derive(Clone)]
pub(crate) struct Input(Arc<Mutex<InputState>>);

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Input")
    }
}

impl Input {
    fn of(src: Source) -> Input {
        Input(Arc::new(Mutex::new(InputState {
            src,
            pending: Vec::new(),
            skip_lf: false,
        })))
    }

    /// Closed from the start: the first read is EOF.
    pub(crate) fn closed() -> Input {
        Input::of(Source::Closed)
    }

    /// These bytes, then EOF.
    pub(crate) fn bytes(bytes: Vec<u8>) -> Input {
        Input::of(Source::Bytes(bytes))
    }

    /// The read end of a shell pipe.
    pub(crate) fn pipe(rx: mpsc::Receiver<Vec<u8>>) -> Input {
        Input::of(Source::Pipe(rx))
    }

    /// A live stream (a started process's stdin, a terminal's keystrokes).
    pub(crate) fn reader(r: impl AsyncRead + Send + 'static) -> Input {
        Input::of(Source::Reader(Box::pin(r)))
    }

    async fn fill(state: &mut InputState) -> bool {
        let chunk = match &mut state.src {
            Source::Closed => None,
            Source::Bytes(b) => Some(std::mem::take(b)).filter(|b| !b.is_empty()),
            Source::Pipe(rx) => rx.recv().await,
            Source::Reader(r) => {
                let mut buf = vec![0u8; 8192];
                match r.read(&mut buf).await {
                    Ok(0) | Err(_) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some(buf)
                    }
                }
            }
        };
        match chunk {
            Some(c) => {
                state.pending.extend_from_slice(&c);
                true
            }
            None => {
                state.src = Source::Closed;
                false
            }
        }
    }

    /// The next bytes available, or `None` at EOF.
    pub(crate) async fn read_chunk(&self) -> Option<Vec<u8>> {
        let mut st = self.0.lock().await;
        if st.pending.is_empty() && !Self::fill(&mut st).await {
            return None;
        }
        Some(std::mem::take(&mut st.pending))
    }

    /// Up to and including the next `\n`, or what is left before EOF;
    /// `None` at EOF.
    pub(crate) async fn read_line(&self) -> Option<Vec<u8>> {
        let mut st = self.0.lock().await;
        loop {
            if let Some(i) = st.pending.iter().position(|&b| b == b'\n') {
                let rest = st.pending.split_off(i + 1);
                return Some(std::mem::replace(&mut st.pending, rest));
            }
            if !Self::fill(&mut st).await {
                return Some(std::mem::take(&mut st.pending)).filter(|l| !l.is_empty());
            }
        }
    }

    /// A line typed at a terminal, without its terminator: `\n`, `\r` or
    /// `\r\n` end it (the line discipline's `ICRNL`); `None` at EOF.
    pub(crate) async fn read_tty_line(&self) -> Option<Vec<u8>> {
        let mut st = self.0.lock().await;
        loop {
            if st.skip_lf && !st.pending.is_empty() {
                if st.pending[0] == b'\n' {
                    st.pending.remove(0);
                }
                st.skip_lf = false;
                continue;
            }
            if let Some(i) = st.pending.iter().position(|&b| b == b'\n' || b == b'\r') {
                let cr = st.pending[i] == b'\r';
                let rest = st.pending.split_off(i + 1);
                let mut line = std::mem::replace(&mut st.pending, rest);
                line.pop();
                st.skip_lf = cr;
                return Some(line);
            }
            if !Self::fill(&mut st).await {
                return Some(std::mem::take(&mut st.pending)).filter(|l| !l.is_empty());
            }
        }
    }

    /// At most `n` bytes (fewer only at EOF).
    pub(crate) async fn read_up_to(&self, n: usize) -> Vec<u8> {
        let mut st = self.0.lock().await;
        while st.pending.len() < n && Self::fill(&mut st).await {}
        let at = n.min(st.pending.len());
        let rest = st.pending.split_off(at);
        std::mem::replace(&mut st.pending, rest)
    }

    /// Everything until EOF.
    pub(crate) async fn read_to_end(&self) -> Vec<u8> {
        let mut st = self.0.lock().await;
        while Self::fill(&mut st).await {}
        std::mem::take(&mut st.pending)
    }
}

/// The three standard streams of a process.
#[derive(Debug, Clone)]
pub(crate) struct Io {
    pub(crate) stdin: Input,
    pub(crate) stdout: Output,
    pub(crate) stderr: Output,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn inputs_read_lines_chunks_and_eof() {
        let i = Input::bytes(b"a\nbc\nd".to_vec());
        assert_eq!(i.read_line().await.unwrap(), b"a\n");
        assert_eq!(i.read_up_to(1).await, b"b");
        assert_eq!(i.read_line().await.unwrap(), b"c\n");
        assert_eq!(i.read_line().await.unwrap(), b"d");
        assert_eq!(i.read_line().await, None);
        assert_eq!(Input::closed().read_chunk().await, None);
        let t = Input::bytes(b"a\r\nb\rc\nd".to_vec());
        assert_eq!(t.read_tty_line().await.unwrap(), b"a");
        assert_eq!(t.read_tty_line().await.unwrap(), b"b");
        assert_eq!(t.read_tty_line().await.unwrap(), b"c");
        assert_eq!(t.read_tty_line().await.unwrap(), b"d");
        assert_eq!(t.read_tty_line().await, None);
        let (tx, rx) = mpsc::channel(2);
        let p = Input::pipe(rx);
        tx.send(b"xy".to_vec()).await.unwrap();
        drop(tx);
        assert_eq!(p.read_to_end().await, b"xy");
    }

    #[tokio::test]
    async fn a_pipe_without_reader_is_broken() {
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        assert_eq!(
            Output::Pipe(tx).write(b"x").await,
            Err(WriteError::BrokenPipe)
        );
        assert_eq!(Output::Null.write(b"x").await, Ok(()));
    }
}
