//! The `openProcess` frames: control frames are JSON text messages tagged
//! by `frame`; `data` frames are binary messages
//! `[stream: u8][offset: u64 big-endian][payload]`.

use corral_contract::{
    ControlSignal, OpenProcessRequest, ProcessExit, SandboxError, SandboxProcessEvidence,
};
use serde::{Deserialize, Serialize};

/// One byte stream of a live process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// The process's input (client → server).
    Stdin,
    /// The process's output (server → client), lossless and ordered.
    Stdout,
    /// The process's diagnostic error stream (server → client).
    Stderr,
}

impl Stream {
    /// The tag byte of a binary `data` frame.
    pub const fn tag(self) -> u8 {
        match self {
            Self::Stdin => 0,
            Self::Stdout => 1,
            Self::Stderr => 2,
        }
    }

    /// The stream of a tag byte.
    pub const fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            0 => Some(Self::Stdin),
            1 => Some(Self::Stdout),
            2 => Some(Self::Stderr),
            _ => None,
        }
    }
}

/// A control frame of the `openProcess` socket. Which side sends which is
/// fixed; a frame from the wrong side ends the session with an `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "frame", rename_all = "snake_case", deny_unknown_fields)]
pub enum Frame {
    /// Client → server, first frame: start the process.
    Open {
        /// The contract request.
        request: OpenProcessRequest,
    },
    /// Server → client, the answer to `open`: the process runs.
    Opened {
        /// The provider's evidence, unchanged.
        evidence: SandboxProcessEvidence,
        /// The stdin credit window, in bytes ([`super::STDIN_WINDOW_BYTES`]).
        stdin_window: u64,
        /// The stdout/stderr acknowledgement window, in bytes
        /// ([`super::REPLAY_WINDOW_BYTES`]).
        replay_window: u64,
    },
    /// Server → client: stdin may be sent up to this absolute offset
    /// (bytes the provider consumed plus the window).
    Credit {
        /// The offset.
        offset: u64,
    },
    /// Client → server: every byte of `stream` before `offset` was
    /// delivered to the reader; the server may forget it.
    Ack {
        /// `stdout` or `stderr`.
        stream: Stream,
        /// The offset.
        offset: u64,
    },
    /// Either side: `stream` ends at `offset` (stdin: client → server,
    /// the process observes EOF; stdout/stderr: server → client, a real
    /// EOF).
    HalfClose {
        /// The stream.
        stream: Stream,
        /// Its total length.
        offset: u64,
    },
    /// Client → server, first frame on a new socket after the previous one
    /// was lost: continue the session of this process from these offsets.
    /// The server answers `resumed` and resends what follows them, or
    /// `error` (`SandboxOperationFailed{open_process, stream_closed}`) when
    /// it holds no such session (never lost, or kept past its replay
    /// retention).
    Replay {
        /// The evidence's `process_id` of the session to continue.
        process_id: corral_contract::ProcessId,
        /// The first stdout byte not yet received.
        stdout_offset: u64,
        /// The first stderr byte not yet received.
        stderr_offset: u64,
    },
    /// Server → client, the answer to `replay`: the session continues.
    /// Stdin bytes from `stdin_offset` on did not arrive and must be sent
    /// again; stdout and stderr resume at the offsets the client named.
    Resumed {
        /// The first stdin byte the server has not received.
        stdin_offset: u64,
    },
    /// Client → server: deliver one control signal.
    Signal {
        /// The request id `settled` answers.
        id: u64,
        /// The signal.
        signal: ControlSignal,
    },
    /// Client → server: tear the process down (idempotent).
    Destroy {
        /// The request id `settled` answers.
        id: u64,
    },
    /// Server → client: `signal` or `destroy` settled.
    Settled {
        /// The request id.
        id: u64,
        /// The provider's error, or none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<SandboxError>,
    },
    /// Server → client: the process exited (sent once; the client keeps
    /// it, so `wait` is re-readable).
    Exit {
        /// The code xor the signal.
        exit: ProcessExit,
    },
    /// Server → client: the session failed; no frame follows.
    Error {
        /// The contract error.
        error: SandboxError,
    },
}

/// A `data` frame: bytes of one stream at an absolute offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFrame {
    /// The stream.
    pub stream: Stream,
    /// The offset of the first payload byte in the stream.
    pub offset: u64,
    /// The bytes (at most [`super::MAX_DATA_FRAME_BYTES`]).
    pub payload: Vec<u8>,
}

/// A binary message that is not a `data` frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Shorter than the 9-byte header.
    #[error("data frame: {0} bytes is shorter than the 9-byte header")]
    Short(usize),
    /// The stream tag is not 0, 1 or 2.
    #[error("data frame: stream tag {0} is not 0 (stdin), 1 (stdout) or 2 (stderr)")]
    Tag(u8),
    /// The payload exceeds the bound.
    #[error("data frame: payload of {0} bytes exceeds {max}", max = super::MAX_DATA_FRAME_BYTES)]
    TooLarge(usize),
}

impl DataFrame {
    /// The binary message.
    pub fn encode(&self) -> Vec<u8> {
        Self::encode_parts(self.stream, self.offset, &self.payload)
    }

    /// The binary message of a frame carrying `payload` at `offset` of
    /// `stream`, copied once (no intermediate `DataFrame`).
    pub fn encode_parts(stream: Stream, offset: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + payload.len());
        out.push(stream.tag());
        out.extend_from_slice(&offset.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// `bytes`, starting at offset `from` of `stream`, as consecutive
    /// binary messages of at most [`super::MAX_DATA_FRAME_BYTES`] each.
    pub fn encode_chunks(
        stream: Stream,
        from: u64,
        bytes: &[u8],
    ) -> impl Iterator<Item = Vec<u8>> + '_ {
        let mut offset = from;
        bytes.chunks(super::MAX_DATA_FRAME_BYTES).map(move |chunk| {
            let message = Self::encode_parts(stream, offset, chunk);
            offset += chunk.len() as u64;
            message
        })
    }

    /// Decodes a binary message.
    pub fn decode(bytes: &[u8]) -> Result<Self, FrameError> {
        let Some((&tag, rest)) = bytes.split_first() else {
            return Err(FrameError::Short(0));
        };
        let Some((offset, payload)) = rest.split_first_chunk::<8>() else {
            return Err(FrameError::Short(bytes.len()));
        };
        let stream = Stream::from_tag(tag).ok_or(FrameError::Tag(tag))?;
        if payload.len() > super::MAX_DATA_FRAME_BYTES {
            return Err(FrameError::TooLarge(payload.len()));
        }
        Ok(Self {
            stream,
            offset: u64::from_be_bytes(*offset),
            payload: payload.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames_round_trip_and_refuse_garbage() {
        let frame = DataFrame {
            stream: Stream::Stdout,
            offset: 1 << 40,
            payload: b"hello".to_vec(),
        };
        assert_eq!(DataFrame::decode(&frame.encode()), Ok(frame));
        assert_eq!(DataFrame::decode(&[1, 2]), Err(FrameError::Short(2)));
        assert_eq!(DataFrame::decode(&[]), Err(FrameError::Short(0)));
        assert_eq!(DataFrame::decode(&[9; 12]), Err(FrameError::Tag(9)));
    }

    #[test]
    fn chunked_encoding_splits_at_the_frame_bound_and_advances_the_offset() {
        let bytes: Vec<u8> = (0..super::super::MAX_DATA_FRAME_BYTES + 10)
            .map(|i| (i % 251) as u8)
            .collect();
        let frames: Vec<DataFrame> = DataFrame::encode_chunks(Stream::Stdin, 100, &bytes)
            .map(|m| DataFrame::decode(&m).unwrap())
            .collect();
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].offset, 100);
        assert_eq!(
            frames[1].offset,
            100 + super::super::MAX_DATA_FRAME_BYTES as u64
        );
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.payload.clone()).collect();
        assert_eq!(joined, bytes);
    }

    #[test]
    fn control_frames_are_tagged_json() {
        let frame = Frame::Ack {
            stream: Stream::Stdout,
            offset: 7,
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(text, r#"{"frame":"ack","stream":"stdout","offset":7}"#);
        assert_eq!(serde_json::from_str::<Frame>(&text).unwrap(), frame);
        let exit = Frame::Exit {
            exit: ProcessExit::Code(corral_contract::ExitCode::SUCCESS),
        };
        let text = serde_json::to_string(&exit).unwrap();
        assert_eq!(serde_json::from_str::<Frame>(&text).unwrap(), exit);
        assert!(serde_json::from_str::<Frame>(r#"{"frame":"ack","offset":1}"#).is_err());
        assert!(serde_json::from_str::<Frame>(r#"{"frame":"teleport"}"#).is_err());
    }
}
