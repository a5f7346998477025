//! `processes.attach`: a handle on a process by name, from any `Sandbox`
//! handle — including one made in another program with
//! [`Sandbox::connect_id`] from a locator.

use std::time::Duration;

use corral_backend::ExitStatus;

use super::{LogCursor, Logs, ProcessInfo, ProcessState, Processes, ReadyCheck, check_name};
use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// A handle on one background process: its sandbox and its name. It owns
/// nothing; dropping it leaves the process running.
#[derive(Debug, Clone)]
pub struct ProcessHandle {
    sandbox: Sandbox,
    name: String,
}

impl ProcessHandle {
    pub(crate) fn new(sandbox: Sandbox, name: &str) -> ProcessHandle {
        ProcessHandle {
            sandbox,
            name: name.to_string(),
        }
    }

    /// The process's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The sandbox it runs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// What is known of it now.
    pub async fn status(&self) -> Result<ProcessInfo> {
        self.sandbox.processes().status(&self.name).await
    }

    /// Its output since `cursor`.
    pub async fn logs(&self, cursor: LogCursor) -> Result<Logs> {
        self.sandbox.processes().logs(&self.name, cursor).await
    }

    /// Waits for it to end.
    pub async fn wait(&self, timeout: Duration) -> Result<ExitStatus> {
        self.sandbox.processes().wait(&self.name, timeout).await
    }

    /// Kills its whole process group.
    pub async fn kill(&self) -> Result<ProcessState> {
        self.sandbox.processes().kill(&self.name).await
    }

    /// Waits until `check` holds.
    pub async fn wait_ready(&self, check: &ReadyCheck, timeout: Duration) -> Result<()> {
        self.sandbox
            .processes()
            .wait_ready(&self.name, check, timeout)
            .await
    }
}

impl Processes<'_> {
    /// A handle on the existing process `name` (running or ended);
    /// `not_found` when the sandbox has no record of it.
    pub async fn attach(&self, name: &str) -> Result<ProcessHandle> {
        const OP: Operation = Operation::ProcessesAttach;
        check_name(self.sb, OP, name)?;
        self.state_of(OP, name).await?;
        Ok(ProcessHandle::new(self.sb.clone(), name))
    }
}
