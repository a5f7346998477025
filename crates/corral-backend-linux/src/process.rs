//! `start_process`: a live process in the sandbox, on its own control
//! connection to PID 1.
//!
//! stdin is a pipe whose `shutdown()` closes it (the process sees EOF);
//! stdout and stderr are pipes that end when the process and its group
//! closed them. `wait` settles once, from PID 1's `Exited` (sent only when
//! nothing of the group is left) and is re-readable; `signal` and `kill`
//! go to the whole process group. Dropping every handle closes the control
//! connection, and PID 1 then kills the group. The pipes and the control
//! connection are read on the runtime's reactor ([`crate::pipes`],
//! [`ControlReader`]): a read lands straight in the caller's buffer, and
//! neither a read nor the watch for the exit holds a thread. An exit while
//! the sandbox cgroup's OOM-kill counter rose since the start (whichever
//! process of the group the kernel killed) is reported as
//! `ExitStatus::OomKilled`.

use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use corral_backend::{
    BackendError, ClosingStdin, ControlSignal, ExecError, ExitStatus, PlatformError,
    ProcessControl, ProcessOps, ProcessSpec, Result, SandboxError, StartedProcess,
};
use tokio::sync::watch;

use crate::control_reader::ControlReader;
use crate::exec::{OomWatch, Stdio, command_env, exit_status, spawn};
use crate::pipes::OutputPipeSize;
use crate::protocol::SpawnUser;
use crate::protocol::{self, Reply, Request};
use crate::state::{State, require_meta};

/// How long `kill` waits for PID 1 to confirm the group is gone.
const KILL_CONFIRM: Duration = Duration::from_secs(10);

/// Starts processes in linux sandboxes.
#[derive(Debug)]
pub struct LinuxProcesses {
    pub(crate) state: Arc<State>,
}

/// The control of one live process (or terminal), over its control connection.
pub(crate) struct Control {
    id: String,
    pid: u32,
    writer: Mutex<UnixStream>,
    exited: watch::Receiver<Option<ExitStatus>>,
    conn: UnixStream,
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.conn.shutdown(std::net::Shutdown::Both);
    }
}

impl Control {
    /// Watches `conn` (the connection that spawned `pid` in sandbox `id`)
    /// for the exit, on the current runtime (call it where one is entered:
    /// an async task, or a blocking task of the runtime).
    pub(crate) fn watch(conn: UnixStream, id: &str, pid: u32) -> Result<Self> {
        Self::watch_with(conn, id, pid, None)
    }

    /// As [`Self::watch`], reporting an exit that `oom` attributes to the
    /// memory limit as [`ExitStatus::OomKilled`].
    pub(crate) fn watch_with(
        conn: UnixStream,
        id: &str,
        pid: u32,
        oom: Option<OomWatch>,
    ) -> Result<Self> {
        let clone = |s: &UnixStream| {
            s.try_clone()
                .map_err(|e| BackendError::from_io("control connection", &e))
        };
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|e| PlatformError::Defective {
                what: format!("watching a process outside a tokio runtime: {e}"),
            })?;
        let _entered = runtime.enter();
        let mut reader = ControlReader::new(clone(&conn)?)
            .map_err(|e| BackendError::from_io("control connection", &e))?;
        let writer = clone(&conn)?;
        let (tx, rx) = watch::channel(None);
        // Ends with the connection: at the exit, or when the handles are
        // dropped (`Drop` shuts the connection down).
        runtime.spawn(async move {
            while let Ok(Some(reply)) = reader.next::<Reply>().await {
                if let Reply::Exited { code, signal } = reply {
                    let status = match oom {
                        // Reading the cgroup's counter blocks (and may
                        // wait a moment for it): once per process.
                        Some(oom) => corral_backend::task::blocking("process task", move || {
                            Ok::<_, BackendError>(oom.status(code, signal))
                        })
                        .await
                        .unwrap_or_else(|_| exit_status(code, signal)),
                        None => exit_status(code, signal),
                    };
                    let _ = tx.send(Some(status));
                    return;
                }
            }
        });
        Ok(Control {
            id: id.into(),
            pid,
            writer: Mutex::new(writer),
            exited: rx,
            conn,
        })
    }

    fn send(&self, signal: i32) -> Result<()> {
        let mut w = self.writer.lock().map_err(|_| PlatformError::Defective {
            what: "process control lock poisoned".into(),
        })?;
        match protocol::write_frame(
            &mut *w,
            &Request::Signal {
                signal,
                group: true,
            },
        ) {
            Ok(()) => Ok(()),
            // PID 1 already reported the exit and the connection is done.
            Err(_) if self.exited.borrow().is_some() => Ok(()),
            Err(e) => Err(BackendError::from_io("signalling the process", &e)),
        }
    }
}

#[async_trait]
impl ProcessControl for Control {
    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    async fn wait(&self) -> Result<ExitStatus> {
        let mut rx = self.exited.clone();
        let status = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| SandboxError::InitGone {
                id: self.id.clone(),
            })?
            .clone();
        status.ok_or_else(|| {
            ExecError::NoExitStatus {
                what: format!("sandbox {}: process {}", self.id, self.pid),
            }
            .into()
        })
    }

    async fn signal(&self, signal: ControlSignal) -> Result<()> {
        self.send(signal.number())
    }

    async fn kill(&self) -> Result<()> {
        if self.exited.borrow().is_some() {
            return Ok(());
        }
        self.send(libc::SIGKILL)?;
        match tokio::time::timeout(KILL_CONFIRM, self.wait()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ExecError::KillUnconfirmed {
                what: format!("sandbox {}: process group {}", self.id, self.pid),
                within: KILL_CONFIRM,
            }
            .into()),
        }
    }
}

fn start(state: &State, id: &str, spec: ProcessSpec) -> Result<StartedProcess> {
    let meta = require_meta(state, id)?;
    let user = SpawnUser::from(spec.run_as);
    let env = command_env(&meta, &spec.env, user);
    let cwd = spec
        .cwd
        .as_ref()
        .map_or_else(|| user.default_cwd().to_string(), ToString::to_string);
    let oom = OomWatch::start(state, id);
    // A live process's output is a stream its caller reads as fast as it
    // can: the larger pipe lets each wake-up carry more.
    let stdio = Stdio {
        stdin: true,
        output: OutputPipeSize::Large,
    };
    let spawned = spawn(state, id, spec.command.to_argv(), env, cwd, user, stdio)?;
    let control = Control::watch_with(spawned.control, id, spawned.pid, Some(oom))?;
    let reactor = |e: std::io::Error| BackendError::from_io("process streams", &e);
    let stdin = spawned
        .stdin
        .map(|w| w.into_sender().map_err(reactor))
        .transpose()?;
    Ok(StartedProcess {
        stdin: Box::pin(ClosingStdin::new(stdin)),
        stdout: Box::pin(spawned.stdout.into_reader().map_err(reactor)?),
        stderr: Box::pin(spawned.stderr.into_reader().map_err(reactor)?),
        control: Arc::new(control),
    })
}

#[async_trait]
impl ProcessOps for LinuxProcesses {
    async fn start_process(&self, id: &str, spec: ProcessSpec) -> Result<StartedProcess> {
        self.state.check_run_as(spec.run_as)?;
        let state = self.state.clone();
        let id = id.to_string();
        corral_backend::task::blocking("process task", move || start(&state, &id, spec)).await
    }
}
