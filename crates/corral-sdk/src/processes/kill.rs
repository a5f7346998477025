//! `processes.kill` and `processes.wait`.

use std::time::{Duration, Instant};

use corral_backend::{ErrorCode, ExitStatus, SignalName};

use super::control::exit_text;
use super::{DEFAULT_KILL_GRACE, ProcessState, Processes, check_name, dir_of};
use crate::Operation;
use crate::error::Result;

/// How long `kill` waits for the group to be gone after `SIGKILL`.
const KILL_CONFIRM: Duration = Duration::from_secs(10);

impl Processes<'_> {
    /// Kills process `name`'s whole process group: `SIGTERM`, then
    /// `SIGKILL` after [`DEFAULT_KILL_GRACE`]. Returns its final state;
    /// killing an ended process changes nothing and returns its state.
    pub async fn kill(&self, name: &str) -> Result<ProcessState> {
        self.kill_with_grace(name, DEFAULT_KILL_GRACE).await
    }

    /// [`kill`](Self::kill) with the time between `SIGTERM` and `SIGKILL`.
    pub async fn kill_with_grace(&self, name: &str, grace: Duration) -> Result<ProcessState> {
        const OP: Operation = Operation::ProcessesKill;
        check_name(self.sb, OP, name)?;
        let (pid, state) = self.state_of(OP, name).await?;
        let (Some(pgid), ProcessState::Running) = (pid, &state) else {
            return Ok(state);
        };
        let mut signal = SignalName::Sigterm;
        self.control(OP, format!("kill -TERM -{pgid} 2>/dev/null"))
            .await?;
        if !self.gone_within(OP, pgid, grace).await? {
            signal = SignalName::Sigkill;
            self.control(OP, format!("kill -KILL -{pgid} 2>/dev/null"))
                .await?;
            if !self.gone_within(OP, pgid, KILL_CONFIRM).await? {
                return Err(self.fail(
                    ErrorCode::Io,
                    OP,
                    format!(
                        "process group {pgid} of {name:?} survived SIGKILL for {KILL_CONFIRM:?}"
                    ),
                ));
            }
        }
        self.end_activity(name).await;
        if let Some(status) = self.exit_of(OP, name).await? {
            return Ok(ProcessState::Exited(status));
        }
        let status = ExitStatus::Signal(signal);
        self.sb
            .files()
            .write_op(
                OP,
                &format!("{}/exit", dir_of(name)),
                exit_text(&status).as_bytes(),
                0o644,
            )
            .await?;
        Ok(ProcessState::Exited(status))
    }

    /// Kills every running process of the sandbox (see [`kill`](Self::kill))
    /// and returns each one's final state, by name. Worth calling before
    /// `destroy` on a backend without isolation (`local`), where a session
    /// started in the sandbox is a host process that destroying the sandbox
    /// does not reach.
    pub async fn kill_all(&self) -> Result<Vec<(String, ProcessState)>> {
        let mut out = Vec::new();
        for p in self.list().await? {
            if p.state.is_running() {
                let state = self.kill(&p.name).await?;
                out.push((p.name, state));
            }
        }
        Ok(out)
    }

    async fn gone_within(&self, op: Operation, pgid: u32, limit: Duration) -> Result<bool> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            if !self.group_alive(op, pgid).await? {
                return Ok(true);
            }
            if started.elapsed() >= limit {
                return Ok(false);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Waits until process `name` ends and returns how it ended. Fails with
    /// `timeout` (showing its last log lines) when it still runs after
    /// `timeout`, and with `not_found` when it ended without an exit record
    /// (its group was killed from outside the SDK).
    pub async fn wait(&self, name: &str, timeout: Duration) -> Result<ExitStatus> {
        const OP: Operation = Operation::ProcessesWait;
        check_name(self.sb, OP, name)?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            match self.state_of(OP, name).await? {
                (_, ProcessState::Exited(status)) => return Ok(status),
                (_, ProcessState::Lost) => {
                    return Err(self.fail(
                        ErrorCode::NotFound,
                        OP,
                        format!(
                            "process {name:?} ended without an exit record (killed from outside the SDK); its exit status is unknown"
                        ),
                    ));
                }
                (_, ProcessState::Running) => {}
            }
            if started.elapsed() >= timeout {
                let tail = self.tail_text(OP, name).await;
                return Err(self.fail(
                    ErrorCode::Timeout,
                    OP,
                    format!("process {name:?} still runs after {timeout:?}; {tail}"),
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }
}
