//! A linux exec as the one settle machine ([`corral_backend::settle`])
//! drives it: the events of its pump and control threads, arriving on one
//! channel, and its control connection, on which a kill is asked of PID 1.

use std::os::unix::net::UnixStream;

use corral_backend::settle::{Run, RunEvent};
use corral_backend::{Result, StreamKind};
use tokio::sync::mpsc;

use crate::protocol::{self, Reply, Request};

/// What the pump and control threads of an exec send.
#[derive(Debug)]
pub enum Event {
    /// A chunk of one output pipe.
    Out(StreamKind, Vec<u8>),
    /// One output pipe reached its end.
    Eof,
    /// A frame of the control connection; `None` when the connection
    /// ended (the control thread then ends too).
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

/// One event of the channel (`None`: every sender is gone) as the settle
/// machine expects it.
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

/// A running exec: the receiving end of its threads' channel, and a
/// writer on its control connection.
#[derive(Debug)]
pub struct LinuxRun {
    events: mpsc::Receiver<Event>,
    control: UnixStream,
}

impl LinuxRun {
    /// The run whose threads send on `events`, controlled through `control`.
    pub fn new(events: mpsc::Receiver<Event>, control: UnixStream) -> Self {
        LinuxRun { events, control }
    }
}

impl Run for LinuxRun {
    type Exit = Exit;

    async fn next(&mut self) -> RunEvent<Exit> {
        // `recv` is cancel-safe: a dropped call loses no event.
        run_event(self.events.recv().await)
    }

    fn kill(&mut self) -> Result<()> {
        let kill = Request::Signal {
            signal: libc::SIGKILL,
            group: true,
        };
        // A connection that cannot be written is one PID 1 has left: the
        // control thread then reports its end, which confirms the kill.
        let _ = protocol::write_frame(&mut self.control, &kill);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_raw_event_maps_onto_the_run_event_the_settle_machine_expects() {
        let exited = Reply::Exited {
            code: Some(3),
            signal: None,
        };
        let killed = Reply::Exited {
            code: None,
            signal: Some(9),
        };
        let other = Reply::Spawned { pid: 7 };
        let rows: [(Option<Event>, RunEvent<Exit>); 8] = [
            (
                Some(Event::Out(StreamKind::Stdout, b"out".to_vec())),
                RunEvent::Output(StreamKind::Stdout, b"out".to_vec()),
            ),
            (
                Some(Event::Out(StreamKind::Stderr, b"err".to_vec())),
                RunEvent::Output(StreamKind::Stderr, b"err".to_vec()),
            ),
            (Some(Event::Eof), RunEvent::Closed),
            (
                Some(Event::Control(Some(exited))),
                RunEvent::Exited(Exit {
                    code: Some(3),
                    signal: None,
                }),
            ),
            (
                Some(Event::Control(Some(killed))),
                RunEvent::Exited(Exit {
                    code: None,
                    signal: Some(9),
                }),
            ),
            (Some(Event::Control(Some(other))), RunEvent::Lost),
            (Some(Event::Control(None)), RunEvent::Lost),
            (None, RunEvent::Exhausted),
        ];
        for (event, want) in rows {
            let case = format!("{event:?}");
            assert_eq!(run_event(event), want, "{case}");
        }
    }

    #[tokio::test]
    async fn a_run_yields_its_channel_in_order_then_exhausted_and_kills_by_one_group_frame() {
        let (ours, mut theirs) = UnixStream::pair().expect("a socket pair");
        let (tx, rx) = mpsc::channel(4);
        let mut run = LinuxRun::new(rx, ours);
        tx.send(Event::Out(StreamKind::Stdout, b"a".to_vec()))
            .await
            .unwrap();
        tx.send(Event::Eof).await.unwrap();
        tx.send(Event::Control(None)).await.unwrap();
        drop(tx);
        assert_eq!(
            run.next().await,
            RunEvent::Output(StreamKind::Stdout, b"a".to_vec())
        );
        assert_eq!(run.next().await, RunEvent::Closed);
        assert_eq!(run.next().await, RunEvent::Lost);
        assert_eq!(run.next().await, RunEvent::Exhausted);
        run.kill().expect("the kill is asked");
        let frame = protocol::read_frame::<Request>(&mut theirs)
            .expect("a frame is read")
            .expect("a frame was written");
        assert!(
            matches!(
                frame,
                Request::Signal {
                    signal: libc::SIGKILL,
                    group: true
                }
            ),
            "{frame:?}"
        );
    }

    #[test]
    fn a_kill_on_a_connection_pid_1_left_is_not_an_error() {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        drop(theirs);
        let (_tx, rx) = mpsc::channel(1);
        let mut run = LinuxRun::new(rx, ours);
        run.kill()
            .expect("the end of the connection confirms the kill");
    }
}
