//! The Connect procedures of envd's services (`process.proto`,
//! `filesystem.proto`) not served here, and how each is refused: in the
//! shape its client reads. A streaming procedure (server- or
//! client-streaming) answers 200 `application/connect+json` with one
//! end-of-stream frame carrying `unimplemented`; a unary one answers
//! Connect's unary error JSON with 501. A procedure of no known name is
//! refused in the shape its request's content type asks for.

use hyper::header::CONTENT_TYPE;
use hyper::{Request, StatusCode};

use super::connect::{STREAM_CONTENT_TYPE, end_of_stream};
use crate::body::{Reply, bytes_reply, connect_error};
use crate::error::E2bError;

/// A procedure envd has that this server does not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unserved {
    /// `process.Process/StreamInput` (client-streaming).
    StreamInput,
}

/// How a procedure's answer is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One JSON message, or Connect's unary error.
    Unary,
    /// Enveloped frames closed by an end-of-stream frame.
    Stream,
}

impl Unserved {
    /// The unserved procedure at `path` (without its leading `/`).
    pub fn from_path(path: &str) -> Option<Self> {
        Some(match path {
            "process.Process/StreamInput" => Unserved::StreamInput,
            _ => return None,
        })
    }

    /// The shape its client reads.
    pub fn shape(self) -> Shape {
        match self {
            Unserved::StreamInput => Shape::Stream,
        }
    }
}

/// The shape a request of an unknown procedure asks for: a streaming
/// Connect request is `application/connect+<codec>`.
pub fn shape_asked<B>(req: &Request<B>) -> Shape {
    let streaming = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/connect+"));
    if streaming {
        Shape::Stream
    } else {
        Shape::Unary
    }
}

/// The refusal of the Connect procedure at `path`, shaped as `shape`.
pub fn refusal(path: &str, shape: Shape) -> Reply {
    let error = E2bError::NotServed {
        what: format!("the Connect procedure {path}"),
    };
    match shape {
        Shape::Unary => connect_error(&error),
        Shape::Stream => bytes_reply(
            StatusCode::OK,
            STREAM_CONTENT_TYPE,
            end_of_stream(Some(&error)).to_vec(),
        ),
    }
}
