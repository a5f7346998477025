//! `exec` on a remote backend: the output arrives as it is produced, in
//! arrival order; an abort asks the server to abort the run (`abort_run`)
//! and still waits for its settlement, which the server sends only after
//! the process group is dead. A timeout is enforced by the server's
//! backend; the client waits a grace period beyond it, then gives up on
//! the connection (whose loss aborts the run on the server). Once the run
//! has settled, the stream is read on to its end (the server ends it right
//! after the settlement), so that its connection goes back to the pool
//! for the next call instead of being closed.

use std::time::Duration;

use corral_backend::{
    BackendError, CancellationToken, ExecError, ExecOutcome, ExecRequest, OutputSink,
};
use corral_contract::Octets;
use http_body_util::BodyExt;
use hyper::StatusCode;

use super::call::Remote;
use crate::protocol::backend::{BackendRoute, ExecBody, ExecFrame, RunRef};

/// How long past its timeout a run may take to settle before the client
/// drops the connection: the server kills the group at the timeout and
/// reports at once, so only a lost server takes this long.
const SETTLE_GRACE: Duration = Duration::from_secs(60);

/// The longest line of an `exec` stream the client accepts: one output
/// chunk in base64 is far smaller.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How long after the settlement the stream may take to end before its
/// connection is dropped rather than given back: the server ends it with
/// the settlement's frame, so only a misbehaving server takes this long.
const END_WAIT: Duration = Duration::from_secs(1);

/// Reads `stream` past the settlement to its end, so that its connection
/// goes back to the pool ([`crate::client::pool::ReplyBody`]); whether it
/// got there. Anything but the end — more bytes, a broken connection, no
/// end within [`END_WAIT`] — drops the stream, and with it the connection.
async fn release<B: hyper::body::Body<Data = bytes::Bytes> + Unpin>(mut stream: B) -> bool {
    tokio::time::timeout(END_WAIT, async {
        loop {
            match stream.frame().await {
                None => return true,
                Some(Ok(frame)) if frame.data_ref().is_none_or(|data| data.is_empty()) => {}
                Some(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

async fn deadline(timeout: Option<Duration>) {
    match timeout {
        Some(timeout) => tokio::time::sleep(timeout + SETTLE_GRACE).await,
        None => std::future::pending().await,
    }
}

pub(super) async fn exec(
    remote: &Remote,
    id: &str,
    req: ExecRequest,
    sink: &mut dyn OutputSink,
) -> Result<ExecOutcome, BackendError> {
    let route = BackendRoute::Exec;
    let abort = req.abort.clone();
    let timeout = req.timeout;
    let body = ExecBody {
        id: id.into(),
        command: req.command,
        cwd: req.cwd.map(|c| c.to_string()),
        env: req.env,
        stdin: req.stdin.map(Octets::new),
        timeout_ms: req
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        activity_path: req.activity_path.map(|p| p.to_string()),
        run_as: req.run_as,
    };
    let response = tokio::select! {
        response = remote.open(route, &body) => response?,
        () = cancelled(abort.as_ref()) => {
            // Nothing was started that the server knows of yet; the request
            // in flight is dropped with its connection, which aborts a run
            // that did start.
            return Err(ExecError::Aborted.into());
        }
    };
    if response.status() != StatusCode::OK {
        let status = response.status();
        let bytes = remote.collect(route, response).await?;
        return Err(remote.failure(route, status, &bytes));
    }
    let mut stream = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    let mut run = None;
    let mut abort_asked = false;
    let give_up = deadline(timeout);
    tokio::pin!(give_up);
    loop {
        let frame = tokio::select! {
            frame = stream.frame() => frame,
            () = cancelled(abort.as_ref()), if !abort_asked => {
                abort_asked = true;
                if let Some(run) = run {
                    // The settlement still comes down the stream; if the
                    // server cannot be told, dropping the stream aborts it.
                    if remote.call::<_, ()>(BackendRoute::AbortRun, &RunRef { run }).await.is_err() {
                        return Err(ExecError::Aborted.into());
                    }
                }
                continue;
            }
            () = &mut give_up => {
                return Err(ExecError::Unsettled {
                    what: remote.context(route),
                    grace: SETTLE_GRACE,
                }
                .into());
            }
        };
        let data = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Some(Err(_)) | None => {
                return Err(
                    remote.unavailable(route, "the connection ended before the run settled")
                );
            }
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let frame: ExecFrame = serde_json::from_slice(&line[..end])
                .map_err(|e| remote.malformed(route, format_args!("malformed frame: {e}")))?;
            match frame {
                ExecFrame::Started { run: started } => {
                    run = Some(started);
                    if abort_asked {
                        let _ = remote
                            .call::<_, ()>(BackendRoute::AbortRun, &RunRef { run: started })
                            .await;
                    }
                }
                ExecFrame::Output { stream, bytes } => sink.chunk(stream, &bytes),
                ExecFrame::Outcome(outcome) => {
                    if pending.is_empty() {
                        let _ = release(stream).await;
                    }
                    return Ok(outcome);
                }
                ExecFrame::Error(error) => {
                    if pending.is_empty() {
                        let _ = release(stream).await;
                    }
                    return Err(error);
                }
            }
        }
        if pending.len() > MAX_LINE_BYTES {
            return Err(remote.malformed(
                route,
                format_args!("a frame longer than {MAX_LINE_BYTES} bytes"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use hyper::body::{Body, Frame};
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A response body that yields `frames`, then ends, or stays silent
    /// forever when `silent_after`.
    struct Scripted {
        frames: VecDeque<Sent>,
        silent_after: bool,
    }

    impl Body for Scripted {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            match self.frames.pop_front() {
                Some(frame) => Poll::Ready(Some(frame)),
                None if self.silent_after => Poll::Pending,
                None => Poll::Ready(None),
            }
        }
    }

    /// One frame a scripted server sends, or its connection breaking.
    type Sent = Result<Frame<Bytes>, std::io::Error>;

    fn data(text: &str) -> Sent {
        Ok(Frame::data(Bytes::from(text.to_owned())))
    }

    /// What a server may send after a run's settlement → whether the
    /// client reads it as the stream's end (and so pools the
    /// connection). Only a clean end is; every hostile row leaves the
    /// connection to be dropped, and none holds the caller past
    /// [`END_WAIT`].
    #[tokio::test]
    async fn only_a_clean_end_after_the_settlement_gives_the_connection_back() {
        // (what the server does, its frames, silent after them, pooled)
        let table: Vec<(&str, Vec<Sent>, bool, bool)> = vec![
            ("the end at once", vec![], false, true),
            (
                "an empty data frame, then the end",
                vec![data("")],
                false,
                true,
            ),
            (
                "trailers, then the end",
                vec![Ok(Frame::trailers(hyper::HeaderMap::new()))],
                false,
                true,
            ),
            (
                "a frame after the settlement",
                vec![data("{\"outcome\":{}}\n")],
                false,
                false,
            ),
            (
                "a broken connection",
                vec![Err(std::io::Error::other("reset"))],
                false,
                false,
            ),
            ("no end, ever", vec![], true, false),
        ];
        for (attack, frames, silent_after, pooled) in table {
            let body = Scripted {
                frames: frames.into(),
                silent_after,
            };
            assert_eq!(release(body).await, pooled, "{attack}");
        }
    }
}
