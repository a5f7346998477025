//! `openProcess`: one long-lived process with live stdio.
//!
//! Declared only when the envelope says `open_process`; otherwise the
//! contract's absent refusal, `SandboxLifecycleConflict{open_process,
//! open_process_unsupported}`.
//!
//! - **One live process per instance, enforced here** ("the enforcement is
//!   adapter-side, not runtime-side"): an open reserves the instance before
//!   anything starts; a second open while the reservation stands is
//!   `SandboxLifecycleConflict{open_process, expected: [active], actual:
//!   process_already_open}`. The reservation is released when the process
//!   exits (a watcher awaits its exit), when it is destroyed, when its
//!   instance is destroyed, released or swept, or when the start fails.
//! - The request runs as given — `executable` and `arguments` as an argument
//!   vector, `working_directory`, `environment` — with no timeout and no
//!   output ceiling of the adapter's own: the process lives until it exits,
//!   is destroyed, or its instance ends.
//! - Streams: see `streams` (input with a real half-close, lossless output,
//!   a bounded best-effort error stream).
//! - `wait` settles once, an exit code 0–255 xor a signal name, and every
//!   later call returns the same exit; `signal` delivers SIGINT, SIGTERM or
//!   SIGKILL to the process group; `destroy` kills the group and reaps it,
//!   idempotent and bounded by 30 seconds. Dropping the handle kills the
//!   process: nothing else could control it.
//! - Evidence is the adapter's own record of what it started: the instance,
//!   its recorded provider and placement, the backend's process id, the
//!   adapter's clock just before the start, and exactly the requested
//!   executable, arguments and working directory. Nothing the workload
//!   prints contributes to it.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use corral_backend::{Backend, Command, ProcessControl, ProcessSpec};
use corral_contract::bounds::OPEN_PROCESS_DESTROY_BOUND_SECONDS;
use corral_contract::{
    BoxFuture, ByteSink, ByteSource, ConflictState, ControlSignal, ExitCause, FailureReason,
    InstanceId, InstanceState, LiveProcess, OpenProcessRequest, Operation, ProcessExit, ProcessId,
    SandboxError, SandboxProcessEvidence,
};
use tokio::sync::OnceCell;

use super::ContractAdapter;
use super::clock;
use super::errors::{Subject, absent, failed, from_backend};
use super::execute::{exit_of, start_failure};
use super::streams::{DiagnosticSource, Sink, Source};

/// The live-process reservations of every instance, by instance id.
#[derive(Debug, Default)]
pub(crate) struct Reservations {
    live: Mutex<HashMap<InstanceId, u64>>,
    next: AtomicU64,
}

impl Reservations {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceId, u64>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves `instance_id`; `None` while another process holds it.
    fn reserve(self: &Arc<Self>, instance_id: &InstanceId) -> Option<Reservation> {
        let mut live = self.table();
        if live.contains_key(instance_id) {
            return None;
        }
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        live.insert(instance_id.clone(), ticket);
        Some(Reservation {
            table: Arc::clone(self),
            instance_id: instance_id.clone(),
            ticket,
        })
    }

    /// Drops the reservation of an instance that is gone.
    pub(crate) fn forget(&self, instance_id: &InstanceId) {
        self.table().remove(instance_id);
    }
}

/// One instance's reservation, released once (by ticket, so that a stale
/// release never frees a newer reservation).
#[derive(Debug)]
struct Reservation {
    table: Arc<Reservations>,
    instance_id: InstanceId,
    ticket: u64,
}

impl Reservation {
    fn release(&self) {
        let mut live = self.table.table();
        if live.get(&self.instance_id) == Some(&self.ticket) {
            live.remove(&self.instance_id);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release();
    }
}

/// A contract process over a backend's live process.
struct Process {
    evidence: SandboxProcessEvidence,
    input: Option<Pin<Box<dyn ByteSink>>>,
    output: Option<Pin<Box<dyn ByteSource>>>,
    error: Option<Pin<Box<dyn ByteSource>>>,
    control: Arc<dyn ProcessControl>,
    reservation: Arc<Reservation>,
    exit: OnceCell<ProcessExit>,
}

fn process_exit(status: &corral_backend::ExitStatus) -> Result<ProcessExit, SandboxError> {
    match exit_of(Operation::OpenProcess, status)? {
        ExitCause::Code(code) => Ok(ProcessExit::Code(code)),
        ExitCause::Signal(signal) => Ok(ProcessExit::Signal(signal)),
        ExitCause::TimedOut => Err(failed(
            Operation::OpenProcess,
            FailureReason::PlatformRejected,
        )),
    }
}

impl LiveProcess for Process {
    fn evidence(&self) -> &SandboxProcessEvidence {
        &self.evidence
    }

    fn take_input(&mut self) -> Option<Pin<Box<dyn ByteSink>>> {
        self.input.take()
    }

    fn take_output(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.output.take()
    }

    fn take_error(&mut self) -> Option<Pin<Box<dyn ByteSource>>> {
        self.error.take()
    }

    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        Box::pin(async move {
            let exit =
                self.exit
                    .get_or_try_init(|| async {
                        let status =
                            self.control.wait().await.map_err(|e| {
                                from_backend(Operation::OpenProcess, Subject::Path, &e)
                            })?;
                        process_exit(&status)
                    })
                    .await?;
            Ok(*exit)
        })
    }

    fn signal(&self, signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.control
                .signal(signal)
                .await
                .map_err(|e| from_backend(Operation::OpenProcess, Subject::Path, &e))
        })
    }

    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            let bound = Duration::from_secs(OPEN_PROCESS_DESTROY_BOUND_SECONDS);
            match tokio::time::timeout(bound, self.control.kill()).await {
                Ok(Ok(())) => {
                    self.reservation.release();
                    Ok(())
                }
                Ok(Err(e)) => Err(from_backend(Operation::OpenProcess, Subject::Path, &e)),
                Err(_) => Err(failed(Operation::OpenProcess, FailureReason::TimedOut)),
            }
        })
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.exit.initialized() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let control = Arc::clone(&self.control);
            runtime.spawn(async move {
                let _ = control.kill().await;
            });
        }
    }
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: OpenProcessRequest,
) -> Result<Box<dyn LiveProcess>, SandboxError> {
    let op = Operation::OpenProcess;
    if !adapter.envelope.open_process {
        return Err(absent(op));
    }
    let Some(ops) = adapter.backend.process_ops() else {
        return Err(absent(op));
    };
    let instance_id = request.instance_id;
    let located = adapter.locate(op, &instance_id).await?;
    op.check_state(located.record.state)?;
    let reservation = adapter.processes.reserve(&instance_id).ok_or_else(|| {
        SandboxError::lifecycle_conflict(
            op,
            &[InstanceState::Active],
            ConflictState::ProcessAlreadyOpen,
        )
    })?;
    let process = request.process;
    // The executable is not empty and each argument is bounded; the
    // executable and 256 arguments are one more than a backend command may
    // carry, refused as the backend refused it: `spawn_failed`.
    let argv = std::iter::once(process.executable.as_str()).chain(process.arguments.iter());
    let command = Command::argv(argv).map_err(|e| start_failure(op, &instance_id, &e.into()))?;
    let spec = ProcessSpec {
        command,
        cwd: process.working_directory.clone(),
        env: process.environment.clone(),
        run_as: None,
    };
    let started_at = clock::now(op)?;
    let live = match ops.start_process(&located.sandbox_id, spec).await {
        Ok(live) => live,
        Err(e) => return Err(start_failure(op, &instance_id, &e)),
    };
    let reservation = Arc::new(reservation);
    let watcher = (Arc::clone(&live.control), Arc::clone(&reservation));
    tokio::spawn(async move {
        let (control, reservation) = watcher;
        let _ = control.wait().await;
        reservation.release();
    });
    let process_id = match live.control.pid() {
        Some(pid) => format!("pid-{pid}"),
        None => format!("process-{}", reservation.ticket),
    };
    let process_id = match ProcessId::new(process_id) {
        Ok(id) => id,
        Err(_) => {
            let _ = live.control.kill().await;
            return Err(failed(op, FailureReason::PlatformRejected));
        }
    };
    let record = &located.record.request;
    let evidence = SandboxProcessEvidence {
        instance_id,
        provider: record.provider.clone(),
        placement: record.placement,
        process_id,
        started_at,
        executable: process.executable,
        arguments: process.arguments,
        working_directory: process.working_directory,
    };
    Ok(Box::new(Process {
        evidence,
        input: Some(Box::pin(Sink::new(live.stdin))),
        output: Some(Box::pin(Source::new(live.stdout))),
        error: Some(Box::pin(DiagnosticSource::spawn(live.stderr))),
        control: live.control,
        reservation,
        exit: OnceCell::new(),
    }))
}
