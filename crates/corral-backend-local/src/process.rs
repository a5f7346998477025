//! Live processes (`start_process`): a host process in its own process
//! group with piped stdio.
//!
//! - `wait` settles once, when the leader has exited and been reaped, and
//!   every later call returns the same status at once.
//! - When the leader exits, whatever is left of its group is killed (as
//!   `exec` does), so stdout and stderr reach EOF.
//! - `signal` goes to the whole group while the process has not settled.
//! - `kill` is idempotent: SIGKILL to the group, then it waits (bounded) for
//!   the leader to be reaped and the group to be gone.
//! - Dropping every handle of a live process kills its group.
//! - `stdin.shutdown()` really closes the pipe (the child sees EOF).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use corral_backend::host_exec::{exit_status_of, kill_group, spawn_group, wait_group_gone};
use corral_backend::{
    BackendError, ClosingStdin, ControlSignal, ExecError, ExitStatus, PlatformError,
    ProcessControl, ProcessSpec, Result, StartedProcess,
};
use tokio::sync::watch;

use crate::exec::place;
use crate::state::State;

/// How long `kill` waits for the leader to be reaped.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// The live process groups each sandbox has, so that `destroy` can kill them.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    live: Mutex<BTreeMap<String, Vec<Weak<Control>>>>,
}

impl Registry {
    fn add(&self, id: &str, control: &Arc<Control>) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let list = live.entry(id.to_owned()).or_default();
        list.retain(|w| w.upgrade().is_some_and(|c| !c.settled()));
        list.push(Arc::downgrade(control));
    }

    /// Kills every live process group of sandbox `id`.
    pub(crate) fn kill_all(&self, id: &str) {
        let list = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.remove(id).unwrap_or_default()
        };
        for control in list.iter().filter_map(Weak::upgrade) {
            control.kill_now();
        }
    }
}

/// The control of one live process.
#[derive(Debug)]
pub(crate) struct Control {
    pgid: u32,
    status: watch::Receiver<Option<ExitStatus>>,
}

impl Control {
    fn settled(&self) -> bool {
        self.status.borrow().is_some()
    }

    fn kill_now(&self) {
        if !self.settled() {
            let _ = kill_group(self.pgid, ControlSignal::Sigkill.number());
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.kill_now();
    }
}

#[async_trait]
impl ProcessControl for Control {
    fn pid(&self) -> Option<u32> {
        Some(self.pgid)
    }

    async fn wait(&self) -> Result<ExitStatus> {
        let mut rx = self.status.clone();
        let settled = rx.wait_for(Option::is_some).await.map_err(|_| {
            BackendError::from(ExecError::NoExitStatus {
                what: format!("process {} (its watching task ended)", self.pgid),
            })
        })?;
        Ok(settled.clone().unwrap_or(ExitStatus::Code(-1)))
    }

    async fn signal(&self, signal: ControlSignal) -> Result<()> {
        if self.settled() {
            return Ok(());
        }
        kill_group(self.pgid, signal.number())
    }

    async fn kill(&self) -> Result<()> {
        self.kill_now();
        if tokio::time::timeout(KILL_WAIT, self.wait()).await.is_err() {
            return Err(ExecError::KillUnconfirmed {
                what: format!("process {}", self.pgid),
                within: KILL_WAIT,
            }
            .into());
        }
        wait_group_gone(self.pgid).await;
        Ok(())
    }
}

/// `start_process` in sandbox `id`.
pub(crate) async fn start(
    state: &State,
    registry: &Registry,
    id: &str,
    spec: ProcessSpec,
) -> Result<StartedProcess> {
    corral_backend::check_run_as(
        crate::state::NAME,
        &crate::LocalBackend::CAPABILITIES,
        spec.run_as,
    )?;
    let placement = {
        let (state, id, cwd, env) = (
            state.clone(),
            id.to_owned(),
            spec.cwd.clone(),
            spec.env.clone(),
        );
        crate::blocking(move || place(&state, &id, cwd.as_ref(), &env)).await?
    };
    let argv = placement.argv(spec.command.to_argv());
    let mut child = spawn_group(&argv, &placement.cwd, &placement.env, true)?;
    let pgid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(PlatformError::Defective {
            what: "a spawned process has no piped stdio".into(),
        }
        .into());
    };
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await;
        // The leader is gone: nothing of its group outlives it.
        let _ = kill_group(pgid, ControlSignal::Sigkill.number());
        let status = status.map_or(ExitStatus::Code(-1), exit_status_of);
        let _ = tx.send(Some(status));
    });
    let control = Arc::new(Control { pgid, status: rx });
    registry.add(id, &control);
    Ok(StartedProcess {
        stdin: Box::pin(ClosingStdin::new(Some(stdin))),
        stdout: Box::pin(stdout),
        stderr: Box::pin(stderr),
        control,
    })
}
