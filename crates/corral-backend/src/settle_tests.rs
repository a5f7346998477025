//! The settle phases on a scripted run, in virtual time: each row is a run's
//! script and what settling it must give.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Bounds, Ending, KillPolicy, Limits, Run, RunEvent, Settled, settle};
use crate::error::{BackendError, ErrorCode, PlatformError, Result};
use crate::exec::{CollectedOutput, StreamKind};

const MS: Duration = Duration::from_millis(1);

const BOUNDS: Bounds = Bounds {
    kill_confirm: Duration::from_millis(1000),
    drain: Duration::from_millis(500),
};

/// A run that yields its script at the times written, and after a kill
/// yields `after_kill` at those delays from the kill.
struct Scripted {
    start: Instant,
    script: VecDeque<(Duration, RunEvent<i32>)>,
    after_kill: Vec<(Duration, RunEvent<i32>)>,
    kills: Vec<Duration>,
    kill_fails: bool,
}

impl Scripted {
    fn new(script: &[(u64, RunEvent<i32>)], after_kill: &[(u64, RunEvent<i32>)]) -> Self {
        Scripted {
            start: Instant::now(),
            script: script
                .iter()
                .map(|(t, e)| (MS * *t as u32, e.clone()))
                .collect(),
            after_kill: after_kill
                .iter()
                .map(|(t, e)| (MS * *t as u32, e.clone()))
                .collect(),
            kills: Vec::new(),
            kill_fails: false,
        }
    }
}

impl Run for Scripted {
    type Exit = i32;

    async fn next(&mut self) -> RunEvent<i32> {
        let Some((at, _)) = self.script.front() else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(self.start + *at).await;
        // Popped only once its time has come: a dropped call loses nothing.
        // A source that ran dry stays dry, as a closed channel does.
        match self.script.front() {
            Some((_, RunEvent::Exhausted)) => RunEvent::Exhausted,
            _ => self.script.pop_front().map(|(_, e)| e).expect("front seen"),
        }
    }

    fn kill(&mut self) -> Result<()> {
        if self.kill_fails {
            return Err(PlatformError::Defective {
                what: "the kill was refused".into(),
            }
            .into());
        }
        let now = self.start.elapsed();
        self.kills.push(now);
        // What comes after the kill replaces whatever was still scripted.
        let mut rest: Vec<_> = self
            .after_kill
            .drain(..)
            .map(|(d, e)| (now + d, e))
            .collect();
        rest.sort_by_key(|(t, _)| *t);
        self.script = rest.into();
        Ok(())
    }
}

fn out(text: &str) -> RunEvent<i32> {
    RunEvent::Output(StreamKind::Stdout, text.as_bytes().to_vec())
}

struct Row {
    name: &'static str,
    script: Vec<(u64, RunEvent<i32>)>,
    after_kill: Vec<(u64, RunEvent<i32>)>,
    timeout_ms: Option<u64>,
    abort_at_ms: Option<u64>,
    kill: KillPolicy,
    ending: Ending<i32>,
    kill_confirmed: Option<bool>,
    drained: bool,
    stdout: &'static str,
    /// When the kill was asked for, in ms from the start.
    killed_at_ms: Option<u64>,
    /// When `settle` returned, in ms from the start.
    settled_at_ms: u64,
}

async fn run_row(row: &Row) -> (Settled<i32>, Scripted, String, u64) {
    let mut run = Scripted::new(&row.script, &row.after_kill);
    let abort = CancellationToken::new();
    if row.abort_at_ms == Some(0) {
        abort.cancel();
    } else if let Some(at) = row.abort_at_ms {
        let token = abort.clone();
        tokio::spawn(async move {
            tokio::time::sleep(MS * at as u32).await;
            token.cancel();
        });
    }
    let mut sink = CollectedOutput::default();
    let limits = Limits {
        timeout: row.timeout_ms.map(|t| MS * t as u32),
        abort: Some(&abort),
        streams: 2,
        kill: row.kill,
        bounds: BOUNDS,
    };
    let settled = settle(&mut run, limits, &mut sink).await.expect("settles");
    let took = run.start.elapsed().as_millis() as u64;
    let stdout = String::from_utf8_lossy(&sink.stdout).into_owned();
    (settled, run, stdout, took)
}

/// SDK specification, "Write a provider": "**Exec** … kills the entire
/// remote process group before settling on timeout or abort." The rows
/// with a timeout or an abort show the kill asked for, and the run settled
/// only once it was confirmed or its bound passed.
#[tokio::test(start_paused = true)]
async fn each_script_settles_as_its_row_says() {
    use RunEvent::{Closed, Exhausted, Exited, Lost};
    let rows = [
        Row {
            name: "an exit after its output, both streams closed: no kill, no wait",
            script: vec![(10, out("a")), (20, Closed), (20, Closed), (30, Exited(0))],
            after_kill: vec![],
            timeout_ms: Some(1000),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Exited(0),
            kill_confirmed: None,
            drained: true,
            stdout: "a",
            killed_at_ms: None,
            settled_at_ms: 30,
        },
        Row {
            name: "output after the exit is drained until the streams close",
            script: vec![
                (10, Exited(3)),
                (40, out("late")),
                (50, Closed),
                (60, Closed),
            ],
            after_kill: vec![],
            timeout_ms: None,
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Exited(3),
            kill_confirmed: None,
            drained: true,
            stdout: "late",
            killed_at_ms: None,
            settled_at_ms: 60,
        },
        Row {
            name: "a grandchild holding a pipe open is cut at the drain bound",
            script: vec![(10, Exited(0)), (20, Closed)],
            after_kill: vec![],
            timeout_ms: None,
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Exited(0),
            kill_confirmed: None,
            drained: false,
            stdout: "",
            killed_at_ms: None,
            settled_at_ms: 10 + 500,
        },
        Row {
            name: "a timeout kills the group and waits for the confirming exit",
            script: vec![(10, out("x")), (5000, Exited(0))],
            after_kill: vec![
                (30, out("y")),
                (40, Closed),
                (40, Closed),
                (50, Exited(137)),
            ],
            timeout_ms: Some(100),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::TimedOut,
            kill_confirmed: Some(true),
            drained: true,
            stdout: "xy",
            killed_at_ms: Some(100),
            settled_at_ms: 150,
        },
        Row {
            name: "a kill never confirmed is given up at the confirm bound",
            script: vec![],
            after_kill: vec![],
            timeout_ms: Some(100),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::TimedOut,
            kill_confirmed: Some(false),
            drained: false,
            stdout: "",
            killed_at_ms: Some(100),
            settled_at_ms: 100 + 1000 + 500,
        },
        Row {
            name: "an abort kills the group",
            script: vec![(10, out("a")), (5000, Exited(0))],
            after_kill: vec![(5, Exited(137)), (6, Closed), (6, Closed)],
            timeout_ms: Some(1000),
            abort_at_ms: Some(50),
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Aborted,
            kill_confirmed: Some(true),
            drained: true,
            stdout: "a",
            killed_at_ms: Some(50),
            settled_at_ms: 56,
        },
        Row {
            name: "an abort at the moment of the timeout is an abort",
            script: vec![(0, out("ready too"))],
            after_kill: vec![(1, Lost)],
            timeout_ms: Some(0),
            abort_at_ms: Some(0),
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Aborted,
            kill_confirmed: Some(true),
            drained: false,
            stdout: "",
            killed_at_ms: Some(0),
            settled_at_ms: 1 + 500,
        },
        Row {
            name: "the timeout at the moment of an exit is a timeout",
            script: vec![(50, Exited(0))],
            after_kill: vec![(1, Exhausted)],
            timeout_ms: Some(50),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::TimedOut,
            kill_confirmed: Some(true),
            drained: false,
            stdout: "",
            killed_at_ms: Some(50),
            settled_at_ms: 51,
        },
        Row {
            name: "a lost controller ends the run without a kill",
            script: vec![(10, out("a")), (20, Lost), (30, Closed), (30, Closed)],
            after_kill: vec![],
            timeout_ms: Some(1000),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Lost,
            kill_confirmed: None,
            drained: true,
            stdout: "a",
            killed_at_ms: None,
            settled_at_ms: 30,
        },
        Row {
            name: "a source that runs dry is a lost run, and ends the drain",
            script: vec![(10, Exhausted)],
            after_kill: vec![],
            timeout_ms: Some(1000),
            abort_at_ms: None,
            kill: KillPolicy::OnAbortOrTimeout,
            ending: Ending::Lost,
            kill_confirmed: None,
            drained: false,
            stdout: "",
            killed_at_ms: None,
            settled_at_ms: 10,
        },
        Row {
            name: "kill-always kills after an exit too, without waiting for a confirmation",
            script: vec![(10, Exited(0))],
            after_kill: vec![(5, Closed), (5, Closed)],
            timeout_ms: None,
            abort_at_ms: None,
            kill: KillPolicy::Always,
            ending: Ending::Exited(0),
            kill_confirmed: Some(true),
            drained: true,
            stdout: "",
            killed_at_ms: Some(10),
            settled_at_ms: 15,
        },
    ];
    for row in &rows {
        let (settled, run, stdout, took) = run_row(row).await;
        let name = row.name;
        assert_eq!(settled.ending, row.ending, "{name}");
        assert_eq!(settled.kill_confirmed, row.kill_confirmed, "{name}");
        assert_eq!(settled.drained, row.drained, "{name}");
        assert_eq!(stdout, row.stdout, "{name}");
        let killed: Vec<u64> = run.kills.iter().map(|d| d.as_millis() as u64).collect();
        assert_eq!(
            killed,
            row.killed_at_ms.into_iter().collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(took, row.settled_at_ms, "{name}");
    }
}

/// A kill that fails is the caller's error, not a settled run.
#[tokio::test(start_paused = true)]
async fn a_failed_kill_is_reported() {
    let mut run = Scripted::new(&[], &[]);
    run.kill_fails = true;
    let limits = Limits {
        timeout: Some(MS * 10),
        abort: None,
        streams: 2,
        kill: KillPolicy::OnAbortOrTimeout,
        bounds: BOUNDS,
    };
    let mut sink = CollectedOutput::default();
    let err: BackendError = settle(&mut run, limits, &mut sink).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Provider, "{err}");
}
