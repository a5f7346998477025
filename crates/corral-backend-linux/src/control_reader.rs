//! The frames PID 1 sends on a control connection, read on the runtime's
//! reactor instead of a thread per connection: the async side of
//! [`protocol::read_frame`], parsing with the same [`protocol::decode`].
//!
//! The connection becomes non-blocking, for its clones too (they share
//! one open file description): the host's writers on it send small frames
//! (a signal, a kill: [`protocol::write_frame`]), which a unix socket
//! takes whole or not at all, and a PID 1 that stopped reading makes such
//! a write fail at once rather than hold the caller's thread.

use std::io;
use std::os::unix::net::UnixStream;

use serde::Deserialize;

use crate::protocol;

/// Bytes asked of the connection per read: replies are a few dozen bytes.
const READ_CHUNK: usize = 4096;

/// Reads the frames of one control connection.
#[derive(Debug)]
pub struct ControlReader {
    conn: tokio::net::UnixStream,
    /// Bytes read and not yet a whole frame; never more than one frame's
    /// header says (at most [`protocol::MAX_FRAME`]) and one read beyond.
    pending: Vec<u8>,
}

impl ControlReader {
    /// Reads `conn` on the current runtime's reactor (call it where a
    /// runtime is entered).
    pub fn new(conn: UnixStream) -> io::Result<Self> {
        conn.set_nonblocking(true)?;
        Ok(ControlReader {
            conn: tokio::net::UnixStream::from_std(conn)?,
            pending: Vec::new(),
        })
    }

    /// The next frame; `Ok(None)` at a clean end of the connection (between
    /// frames), an error for an end inside a frame, an oversized frame or
    /// one that does not parse. Cancel-safe: bytes read stay in the
    /// reader, so a dropped call loses nothing.
    pub async fn next<T: for<'de> Deserialize<'de>>(&mut self) -> io::Result<Option<T>> {
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            if let Some((msg, used)) = protocol::decode::<T>(&self.pending)? {
                self.pending.drain(..used);
                return Ok(Some(msg));
            }
            self.conn.readable().await?;
            match self.conn.try_read(&mut chunk) {
                Ok(0) if self.pending.is_empty() => return Ok(None),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the control connection ended inside a frame",
                    ));
                }
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use crate::protocol::{MAX_FRAME, Reply};

    fn exited(code: i32) -> Reply {
        Reply::Exited {
            code: Some(code),
            signal: None,
        }
    }

    /// What PID 1's side (or whoever holds it) writes → what the reader
    /// makes of it, one row per case; the hostile rows are refused with an
    /// error, never a panic, a hang or an unbounded buffer.
    #[tokio::test]
    async fn what_the_peer_sends_is_read_or_refused() {
        let two = [
            protocol::encode(&exited(1)).unwrap(),
            protocol::encode(&exited(2)).unwrap(),
        ]
        .concat();
        let mut oversized = u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes().to_vec();
        oversized.extend_from_slice(b"{}");
        let mut garbage = 3u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(b"xyz");
        let mut cut = protocol::encode(&exited(3)).unwrap();
        cut.truncate(cut.len() - 2);
        let mut wrong_kind = 2u32.to_be_bytes().to_vec();
        wrong_kind.extend_from_slice(b"{}");
        type Want = std::result::Result<Vec<Reply>, io::ErrorKind>;
        let rows: Vec<(&str, Vec<u8>, Want)> = vec![
            ("nothing, then the end", vec![], Ok(vec![])),
            (
                "two frames at once",
                two.clone(),
                Ok(vec![exited(1), exited(2)]),
            ),
            (
                "a header cut short",
                vec![0, 0],
                Err(io::ErrorKind::UnexpectedEof),
            ),
            ("a body cut short", cut, Err(io::ErrorKind::UnexpectedEof)),
            (
                "a header over the maximum",
                oversized,
                Err(io::ErrorKind::InvalidData),
            ),
            (
                "a body that is not json",
                garbage,
                Err(io::ErrorKind::InvalidData),
            ),
            (
                "json that is no reply",
                wrong_kind,
                Err(io::ErrorKind::InvalidData),
            ),
        ];
        for (case, bytes, want) in rows {
            let (ours, mut theirs) = UnixStream::pair().unwrap();
            theirs.write_all(&bytes).unwrap();
            drop(theirs);
            let mut reader = ControlReader::new(ours).unwrap();
            let mut got = Vec::new();
            let result = loop {
                match reader.next::<Reply>().await {
                    Ok(Some(reply)) => got.push(reply),
                    Ok(None) => break Ok(got),
                    Err(e) => break Err(e.kind()),
                }
            };
            assert_eq!(result, want, "{case}");
        }
    }

    #[tokio::test]
    async fn a_frame_written_a_byte_at_a_time_is_read_whole() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let mut reader = ControlReader::new(ours).unwrap();
        let bytes = protocol::encode(&exited(7)).unwrap();
        let writer = tokio::task::spawn_blocking(move || {
            for b in bytes {
                theirs.write_all(&[b]).unwrap();
                std::thread::yield_now();
            }
            theirs
        });
        let got = reader.next::<Reply>().await.unwrap();
        assert_eq!(got, Some(exited(7)));
        drop(writer.await.unwrap());
        assert_eq!(reader.next::<Reply>().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_cancelled_read_loses_no_byte() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let mut reader = ControlReader::new(ours).unwrap();
        let bytes = protocol::encode(&exited(9)).unwrap();
        theirs.write_all(&bytes[..3]).unwrap();
        // The read takes the three bytes, then waits for more: cancel it.
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(50), reader.next::<Reply>())
                .await;
        assert!(waited.is_err(), "no whole frame yet: {waited:?}");
        theirs.write_all(&bytes[3..]).unwrap();
        assert_eq!(reader.next::<Reply>().await.unwrap(), Some(exited(9)));
    }

    #[tokio::test]
    async fn a_writer_on_a_clone_sends_whole_frames() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let mut writer = ours.try_clone().unwrap();
        let _reader = ControlReader::new(ours).unwrap();
        let kill = crate::protocol::Request::Signal {
            signal: 9,
            group: true,
        };
        protocol::write_frame(&mut writer, &kill).unwrap();
        let got = protocol::read_frame::<crate::protocol::Request>(&mut theirs).unwrap();
        assert_eq!(got, Some(kill));
    }
}
