//! `exec`: one command to completion in its own process group, its output
//! streamed in order; on timeout or abort the group dies before the call
//! settles.

use std::collections::BTreeMap;
use std::sync::Arc;

use corral_backend::{
    BackendError, Command, ExecError, ExecOutcome, ExecRequest, OutputSink, Result, StreamKind,
    TimeoutLimit,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::Inner;
use crate::procs::{Group, Job, SpawnError};
use crate::sandbox::Sandbox;
use crate::shell::Shell;
use crate::shell::io::{Chunk, Input, Io, Output};

/// Output chunks buffered between the command and the sink.
const OUTPUT_CHUNKS: usize = 64;

/// A started leader and its group.
pub(crate) struct Launched {
    pub(crate) group: Arc<Group>,
    pub(crate) job: Job,
}

/// The backend error for a refused spawn.
pub(crate) fn spawn_error(e: SpawnError) -> BackendError {
    match e {
        SpawnError::Limit(n) => ExecError::ProcessLimit { pids: n }.into(),
        SpawnError::Killed => ExecError::GroupDying.into(),
    }
}

/// Starts `command` as the leader of a new process group.
pub(crate) fn launch(
    sb: &Arc<Sandbox>,
    command: Command,
    cwd: String,
    env: BTreeMap<String, String>,
    io: Io,
) -> Result<Launched> {
    let group = sb.procs.new_group();
    let (sbc, g) = (Arc::clone(sb), Arc::clone(&group));
    let job = group
        .spawn(move |pid| async move {
            Shell::new(sbc, g, env, cwd, io, pid)
                .run_top(&command)
                .await
        })
        .map_err(spawn_error)?;
    Ok(Launched { group, job })
}

/// Aborts the group if the exec future is dropped before it settles (a
/// caller's own timeout): nothing it started outlives it.
struct KillOnDrop(Arc<Group>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn deadline(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Kills the group, then delivers what it wrote before dying.
async fn finish(group: &Group, rx: &mut mpsc::Receiver<Chunk>, sink: &mut dyn OutputSink) {
    group.kill().await;
    rx.close();
    while let Some((kind, bytes)) = rx.recv().await {
        sink.chunk(kind, &bytes);
    }
}

pub(crate) async fn run(
    inner: &Inner,
    id: &str,
    req: ExecRequest,
    sink: &mut dyn OutputSink,
) -> Result<ExecOutcome> {
    corral_backend::check_run_as(crate::NAME, &crate::CAPABILITIES, req.run_as)?;
    let sb = inner.sandbox(id)?;
    sb.refuse_paused()?;
    let cwd = sb.resolve_cwd(req.cwd.as_ref())?;
    let env = sb.command_env(&req.env, &cwd);
    let abort = req.abort.clone().unwrap_or_default();
    if abort.is_cancelled() {
        return Err(ExecError::Aborted.into());
    }
    let (tx, mut rx) = mpsc::channel::<Chunk>(OUTPUT_CHUNKS);
    let io = Io {
        stdin: req.stdin.map(Input::bytes).unwrap_or_else(Input::closed),
        stdout: Output::Chan(StreamKind::Stdout, tx.clone()),
        stderr: Output::Chan(StreamKind::Stderr, tx),
    };
    let started = sb.now();
    let Launched { group, job } = launch(&sb, req.command, cwd, env, io)?;
    let _guard = KillOnDrop(Arc::clone(&group));
    let at = req.timeout.map(|t| Instant::now() + t);
    let wait = job.wait();
    tokio::pin!(wait);
    let mut open = true;
    let exit = loop {
        tokio::select! {
            biased;
            () = abort.cancelled() => {
                finish(&group, &mut rx, sink).await;
                return Err(ExecError::Aborted.into());
            }
            () = deadline(at) => {
                finish(&group, &mut rx, sink).await;
                return Err(ExecError::TimedOut {
                    after: req.timeout.unwrap_or_default(),
                    limit: TimeoutLimit::Requested,
                }
                .into());
            }
            chunk = rx.recv(), if open => match chunk {
                Some((kind, bytes)) => sink.chunk(kind, &bytes),
                None => open = false,
            },
            exit = &mut wait => break exit,
        }
    };
    finish(&group, &mut rx, sink).await;
    sb.touch();
    Ok(ExecOutcome {
        status: exit.status(),
        started_at_ms: started,
        finished_at_ms: sb.now().max(started),
    })
}
