//! The one way a command run on the host settles: every backend that runs
//! host processes (linux, local) feeds its run's events to [`settle`] and
//! gets back how the run ended.
//!
//! A run goes through three phases:
//!
//! 1. **Running.** Output is delivered to the sink as it comes, until the
//!    command exits, its controller is lost, the caller aborts, or the time
//!    limit passes. An abort wins over a timer that fires at the same
//!    moment, and both win over output that is ready at the same moment.
//! 2. **Killing.** After an abort or a timeout (and after every ending when
//!    the backend's [`KillPolicy`] is [`KillPolicy::Always`]), the run's
//!    process group is killed, and [`settle`] waits, at most
//!    [`Bounds::kill_confirm`], for the run to confirm that it ended. Output
//!    that arrives meanwhile is still delivered.
//! 3. **Draining.** What the dead group left in its pipes is delivered,
//!    until every stream is closed or [`Bounds::drain`] has passed, so a
//!    grandchild that keeps a pipe open cannot hold the call.
//!
//! The phases are driven by a [`Run`], so they are tested here on a
//! scripted run, without processes or privileges.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::Result;
use crate::exec::{OutputSink, StreamKind};

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEvent<X> {
    /// A chunk of one output stream.
    Output(StreamKind, Vec<u8>),
    /// One output stream reached its end.
    Closed,
    /// The command exited, with what the backend knows of how.
    Exited(X),
    /// The run's controller went away before the command exited (the
    /// sandbox's init died, or answered out of protocol).
    Lost,
    /// No event will ever come again.
    Exhausted,
}

/// A command running on the host, as [`settle`] drives it.
pub trait Run {
    /// What the backend knows of an exit.
    type Exit;

    /// The next event. Cancel-safe: [`settle`] may drop the future when a
    /// timer fires, and call again.
    fn next(&mut self) -> impl std::future::Future<Output = RunEvent<Self::Exit>> + Send;

    /// Asks for the run's whole process group to be killed now.
    fn kill(&mut self) -> Result<()>;
}

/// When the process group is killed at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPolicy {
    /// Only after an abort or a timeout: the backend's own supervisor kills
    /// what a command leaves behind when it exits (the linux sandbox's init).
    OnAbortOrTimeout,
    /// After every ending: nothing else would kill what the command left
    /// behind (the local backend's host process groups).
    Always,
}

/// How long each phase after the first may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The longest wait for a killed run to confirm its end.
    pub kill_confirm: Duration,
    /// The longest drain of the pipes once the run has ended.
    pub drain: Duration,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending<X> {
    /// The command exited by itself.
    Exited(X),
    /// The time limit passed; the group was killed.
    TimedOut,
    /// The caller aborted; the group was killed.
    Aborted,
    /// The run's controller went away before the command exited.
    Lost,
}

/// The end of a run, and whether each later phase finished in its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled<X> {
    /// How the run ended.
    pub ending: Ending<X>,
    /// Whether the group was killed and the kill confirmed in its bound
    /// (`None`: no kill was needed).
    pub kill_confirmed: Option<bool>,
    /// Whether every output stream reached its end within the drain bound.
    pub drained: bool,
}

/// What a run is asked to respect.
#[derive(Debug, Clone)]
pub struct Limits<'a> {
    /// The time limit of phase 1 (`None`: none).
    pub timeout: Option<Duration>,
    /// The caller's abort.
    pub abort: Option<&'a CancellationToken>,
    /// The run's output streams that will each report [`RunEvent::Closed`].
    pub streams: usize,
    /// When the group is killed.
    pub kill: KillPolicy,
    /// The bounds of phases 2 and 3.
    pub bounds: Bounds,
}

/// Drives `run` through the three phases of the module documentation,
/// delivering its output to `sink`. Fails only when killing the group
/// fails.
pub async fn settle<R: Run>(
    run: &mut R,
    limits: Limits<'_>,
    sink: &mut dyn OutputSink,
) -> Result<Settled<R::Exit>> {
    let never = CancellationToken::new();
    let abort = limits.abort.unwrap_or(&never);
    let timer = async {
        match limits.timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timer);
    let mut open = limits.streams;

    let ending = loop {
        tokio::select! {
            biased;
            _ = abort.cancelled() => break Ending::Aborted,
            _ = &mut timer => break Ending::TimedOut,
            event = run.next() => match event {
                RunEvent::Output(kind, bytes) => sink.chunk(kind, &bytes),
                RunEvent::Closed => open = open.saturating_sub(1),
                RunEvent::Exited(exit) => break Ending::Exited(exit),
                RunEvent::Lost | RunEvent::Exhausted => break Ending::Lost,
            },
        }
    };

    let must_kill = match limits.kill {
        KillPolicy::Always => true,
        KillPolicy::OnAbortOrTimeout => matches!(ending, Ending::TimedOut | Ending::Aborted),
    };
    let mut kill_confirmed = None;
    if must_kill {
        run.kill()?;
        // An exit already seen needs no confirming; a lost controller
        // cannot give one.
        let waits = matches!(ending, Ending::TimedOut | Ending::Aborted);
        let confirmed = !waits || confirm(run, limits.bounds.kill_confirm, &mut open, sink).await;
        kill_confirmed = Some(confirmed);
    }

    let drained = drain(run, limits.bounds.drain, &mut open, sink).await;
    Ok(Settled {
        ending,
        kill_confirmed,
        drained,
    })
}

/// Phase 2: waits for a killed run to end. True when it did in `bound`.
async fn confirm<R: Run>(
    run: &mut R,
    bound: Duration,
    open: &mut usize,
    sink: &mut dyn OutputSink,
) -> bool {
    let deadline = tokio::time::sleep(bound);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            biased;
            _ = &mut deadline => return false,
            event = run.next() => match event {
                RunEvent::Output(kind, bytes) => sink.chunk(kind, &bytes),
                RunEvent::Closed => *open = open.saturating_sub(1),
                RunEvent::Exited(_) | RunEvent::Lost | RunEvent::Exhausted => return true,
            },
        }
    }
}

/// Phase 3: delivers what is left until every stream closed. True when
/// they all did in `bound`.
async fn drain<R: Run>(
    run: &mut R,
    bound: Duration,
    open: &mut usize,
    sink: &mut dyn OutputSink,
) -> bool {
    let deadline = tokio::time::sleep(bound);
    tokio::pin!(deadline);
    while *open > 0 {
        tokio::select! {
            biased;
            _ = &mut deadline => return false,
            event = run.next() => match event {
                RunEvent::Output(kind, bytes) => sink.chunk(kind, &bytes),
                RunEvent::Closed => *open -= 1,
                RunEvent::Exited(_) | RunEvent::Lost => {}
                RunEvent::Exhausted => return false,
            },
        }
    }
    true
}

#[cfg(test)]
#[path = "settle_tests.rs"]
mod tests;
