//! `start_process`: a command with live stdio over in-memory duplex pipes,
//! and the control shared with terminals.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corral_backend::{
    ControlSignal, ExitStatus, ProcessControl, ProcessOps, ProcessSpec, Result, SignalName,
    StartedProcess, TerminalControl,
};
use tokio::sync::{Notify, watch};

use crate::Inner;
use crate::exec::{Launched, launch};
use crate::procs::{Group, Job, JobEntry, lock};
use crate::shell::io::{Input, Io, Output};

/// Bytes buffered in each direction of a live stream.
pub(crate) const STREAM_BYTES: usize = 64 * 1024;

/// Control of a live process or terminal: its groups, its settled status.
#[derive(Debug)]
pub(crate) struct Control {
    pid: u32,
    leader: Arc<JobEntry>,
    /// The leader's group first; a terminal adds one group per line.
    pub(crate) groups: Arc<Mutex<Vec<Arc<Group>>>>,
    status: watch::Sender<Option<ExitStatus>>,
    /// For an interactive terminal: `SIGINT` interrupts the running line.
    interrupt: Option<Arc<Notify>>,
    /// The window size (terminals).
    pub(crate) size: Arc<Mutex<(u16, u16)>>,
}

impl Control {
    pub(crate) fn new(
        job: &Job,
        groups: Arc<Mutex<Vec<Arc<Group>>>>,
        interrupt: Option<Arc<Notify>>,
        size: Arc<Mutex<(u16, u16)>>,
    ) -> Arc<Control> {
        Arc::new(Control {
            pid: job.pid,
            leader: job.entry(),
            groups,
            status: watch::Sender::new(None),
            interrupt,
            size,
        })
    }

    /// Records the exit; only the first call counts.
    fn settle(&self, status: ExitStatus) {
        self.status.send_if_modified(|s| {
            if s.is_some() {
                return false;
            }
            *s = Some(status);
            true
        });
    }

    async fn kill_groups(&self) {
        let groups: Vec<Arc<Group>> = lock(&self.groups).clone();
        for g in groups {
            g.kill().await;
        }
    }

    /// Waits for the leader, kills what it left, settles.
    pub(crate) fn supervise(self: &Arc<Self>, job: Job) {
        let control = Arc::clone(self);
        tokio::spawn(async move {
            let exit = job.wait().await;
            control.kill_groups().await;
            control.settle(exit.status());
        });
    }
}

#[async_trait]
impl ProcessControl for Control {
    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    async fn wait(&self) -> Result<ExitStatus> {
        let mut rx = self.status.subscribe();
        let settled = rx.wait_for(Option::is_some).await;
        // The sender lives in `self`, so the channel cannot close.
        Ok(settled
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or(ExitStatus::Signal(SignalName::Sigkill)))
    }

    async fn signal(&self, signal: ControlSignal) -> Result<()> {
        if self.status.borrow().is_some() {
            return Ok(());
        }
        if self.leader.is_finished() {
            // Exited on its own: the supervisor settles with its code.
            self.wait().await?;
            return Ok(());
        }
        if signal == ControlSignal::Sigint
            && let Some(interrupt) = &self.interrupt
        {
            interrupt.notify_waiters();
            return Ok(());
        }
        self.settle(ExitStatus::Signal(signal.into()));
        self.kill_groups().await;
        Ok(())
    }

    async fn kill(&self) -> Result<()> {
        self.signal(ControlSignal::Sigkill).await?;
        self.wait().await.map(|_| ())
    }
}

#[async_trait]
impl TerminalControl for Control {
    async fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        *lock(&self.size) = (cols, rows);
        Ok(())
    }
}

#[async_trait]
impl ProcessOps for Inner {
    async fn start_process(&self, id: &str, spec: ProcessSpec) -> Result<StartedProcess> {
        corral_backend::check_run_as(crate::NAME, &crate::CAPABILITIES, spec.run_as)?;
        let sb = self.sandbox(id)?;
        sb.refuse_paused()?;
        let cwd = sb.resolve_cwd(spec.cwd.as_ref())?;
        let env = sb.command_env(&spec.env, &cwd);
        let (stdin_caller, stdin_proc) = tokio::io::duplex(STREAM_BYTES);
        let (stdout_proc, stdout_caller) = tokio::io::duplex(STREAM_BYTES);
        let (stderr_proc, stderr_caller) = tokio::io::duplex(STREAM_BYTES);
        let io = Io {
            stdin: Input::reader(stdin_proc),
            stdout: Output::writer(stdout_proc),
            stderr: Output::writer(stderr_proc),
        };
        let Launched { group, job } = launch(&sb, spec.command, cwd, env, io)?;
        let groups = Arc::new(Mutex::new(vec![group]));
        let control = Control::new(&job, groups, None, Arc::new(Mutex::new((0, 0))));
        control.supervise(job);
        Ok(StartedProcess {
            stdin: Box::pin(stdin_caller),
            stdout: Box::pin(stdout_caller),
            stderr: Box::pin(stderr_caller),
            control,
        })
    }
}
