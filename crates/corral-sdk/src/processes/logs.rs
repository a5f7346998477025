//! `processes.logs`: a process's output from a cursor, redacted.
//!
//! Output is read from the record's `stdout` and `stderr` files from byte
//! offsets (with the ranged read where the backend declares it). While the
//! process runs, a read stops at the last complete line, so that a secret
//! (one without a line break) is never cut in two by a cursor and leaks
//! half-redacted; a line longer than [`MAX_LOG_READ`] is returned in
//! pieces. Once the process has ended, everything is returned.

use corral_backend::{ErrorCode, StreamKind};
use serde::{Deserialize, Serialize};

use super::{Processes, check_name, dir_of};
use crate::Operation;
use crate::error::Result;

/// Most bytes of each stream one `logs` call reads.
pub const MAX_LOG_READ: u64 = 1 << 20;

/// How many trailing lines of each stream an error shows.
pub const TAIL_LINES: usize = 20;

/// Where the next `logs` call continues: a byte offset per stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCursor {
    /// Bytes of stdout already returned.
    pub stdout: u64,
    /// Bytes of stderr already returned.
    pub stderr: u64,
}

/// Output of one stream since the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// Which stream.
    pub stream: StreamKind,
    /// The bytes, secrets redacted.
    pub data: Vec<u8>,
}

/// What one `logs` call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logs {
    /// New output: a stdout chunk, then a stderr chunk, each only when non-empty.
    pub chunks: Vec<LogChunk>,
    /// Pass this to the next call to continue.
    pub next: LogCursor,
    /// True when the process had ended before this read: nothing more will come.
    pub ended: bool,
}

impl Logs {
    /// The bytes of one stream in this batch.
    pub fn bytes(&self, stream: StreamKind) -> Vec<u8> {
        self.chunks
            .iter()
            .filter(|c| c.stream == stream)
            .flat_map(|c| c.data.iter().copied())
            .collect()
    }

    /// One stream's bytes in this batch as text (invalid UTF-8 replaced).
    pub fn text(&self, stream: StreamKind) -> String {
        String::from_utf8_lossy(&self.bytes(stream)).into_owned()
    }
}

impl Processes<'_> {
    /// Output of process `name` since `cursor` (use `LogCursor::default()`
    /// for the start), secrets redacted, and the cursor to continue from.
    pub async fn logs(&self, name: &str, cursor: LogCursor) -> Result<Logs> {
        const OP: Operation = Operation::ProcessesLogs;
        check_name(self.sb, OP, name)?;
        // Decide "ended" before reading, so an ended read holds everything.
        let (_, state) = self.state_of(OP, name).await?;
        let ended = !state.is_running();
        let mut chunks = Vec::new();
        let mut next = cursor;
        for (stream, file, offset) in [
            (StreamKind::Stdout, "stdout", &mut next.stdout),
            (StreamKind::Stderr, "stderr", &mut next.stderr),
        ] {
            let raw = self.read_from(OP, name, file, *offset).await?;
            let take = if ended || raw.len() as u64 >= MAX_LOG_READ {
                raw.len()
            } else {
                raw.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)
            };
            if take == 0 {
                continue;
            }
            *offset += take as u64;
            let data = self.sb.redactor().redact_bytes(&raw[..take]);
            chunks.push(LogChunk { stream, data });
        }
        Ok(Logs {
            chunks,
            next,
            ended,
        })
    }

    /// Up to [`MAX_LOG_READ`] bytes of a record's output file from `offset`
    /// (empty when the file does not exist yet).
    async fn read_from(
        &self,
        op: Operation,
        name: &str,
        file: &str,
        offset: u64,
    ) -> Result<Vec<u8>> {
        let path = format!("{}/{file}", dir_of(name));
        match self
            .sb
            .files()
            .read_range(&path, offset, MAX_LOG_READ)
            .await
        {
            Ok(b) => Ok(b),
            Err(e) if e.code == ErrorCode::NotFound => Ok(Vec::new()),
            Err(e) => Err(self.fail(e.code, op, e.message)),
        }
    }

    /// The last [`TAIL_LINES`] lines of each stream, redacted, as one line
    /// of text for error messages.
    pub(crate) async fn tail_text(&self, op: Operation, name: &str) -> String {
        let mut parts = Vec::new();
        for file in ["stdout", "stderr"] {
            let path = format!("{}/{file}", dir_of(name));
            let size = match self.sb.files().stat(&path).await {
                Ok(st) => st.size,
                Err(_) => continue,
            };
            let start = size.saturating_sub(16 * 1024);
            let Ok(raw) = self.read_from(op, name, file, start).await else {
                continue;
            };
            let text = self.sb.redact_text(&String::from_utf8_lossy(&raw));
            let mut lines: Vec<&str> = text.lines().collect();
            if start > 0 && !lines.is_empty() {
                // The window may start mid-line (or mid-secret): drop that line.
                lines.remove(0);
            }
            let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
            if tail.is_empty() {
                parts.push(format!("{file}: (empty)"));
            } else {
                parts.push(format!("{file}: {}", tail.join(" | ")));
            }
        }
        if parts.is_empty() {
            "no log lines".to_string()
        } else {
            format!("last log lines — {}", parts.join("; "))
        }
    }
}
