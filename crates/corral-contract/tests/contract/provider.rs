//! The `SandboxProvider` trait: a minimum provider compiles against it, the
//! optional members refuse with their typed errors, handoffs carry an
//! idempotent rollback, and the live-process traits are object safe.

use crate::common;
use std::future::{Future, ready};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake};

use common::*;
use corral_contract::*;

fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Counts its invocations; idempotent in effect.
struct CountingRollback(Arc<AtomicUsize>);

impl Rollback for CountingRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(ready(Ok(())))
    }
}

/// The contract's "minimum provider": implements the required members,
/// fails `readFile` closed, stubs the snapshot members, omits the optional
/// ones.
struct Minimum {
    caps: SandboxProviderCapabilities,
    rollbacks: Arc<AtomicUsize>,
    state: Mutex<Option<SandboxInstance>>,
}

impl Minimum {
    fn new() -> Self {
        Self {
            caps: SandboxProviderCapabilities::minimum(),
            rollbacks: Arc::new(AtomicUsize::new(0)),
            state: Mutex::new(None),
        }
    }

    fn handoff<T>(&self, value: T) -> Handoff<T> {
        Handoff::new(value, CountingRollback(self.rollbacks.clone()))
    }
}

fn snapshots_unavailable<T>() -> std::future::Ready<Result<T, SandboxError>> {
    ready(Err(SandboxError::capability_unavailable(
        Requirement::Snapshots,
    )))
}

impl SandboxProvider for Minimum {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        &self.caps
    }

    fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send {
        let instance = SandboxInstance::for_request(
            InstanceId::new("min-1").unwrap(),
            &request,
            &self.caps,
            InstanceState::Provisioning,
        );
        *self.state.lock().unwrap() = Some(instance.clone());
        ready(Ok(self.handoff(instance)))
    }

    fn write_file(
        &self,
        _request: WriteFileRequest,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send {
        ready(Ok(()))
    }

    fn activate(
        &self,
        instance_id: InstanceId,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send {
        let mut state = self.state.lock().unwrap();
        let result = match state.as_mut() {
            Some(i) if i.instance_id == instance_id => {
                i.state = InstanceState::Active;
                Ok(self.handoff(i.clone()))
            }
            _ => Err(SandboxError::SandboxInstanceNotFound { instance_id }),
        };
        ready(result)
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        let at = ts("2026-11-29T19:30:00.000Z");
        let _ = request;
        Ok(SandboxExecutionResult {
            exit: ExitCause::Code(ExitCode::SUCCESS),
            interval: Interval::new(at, at).unwrap(),
            stdout: StreamCapture::default(),
            stderr: StreamCapture::default(),
        })
    }

    fn read_file(
        &self,
        _request: ReadFileRequest,
    ) -> impl Future<Output = Result<ReadFileResult, SandboxError>> + Send {
        ready(Err(SandboxError::capability_unavailable(
            Requirement::PhysicallyContainedFileRead,
        )))
    }

    fn snapshot(
        &self,
        _request: SnapshotRequest,
    ) -> impl Future<Output = Result<Handoff<SnapshotRef>, SandboxError>> + Send {
        snapshots_unavailable()
    }

    fn clone_snapshot(
        &self,
        _request: CloneSnapshotRequest,
    ) -> impl Future<Output = Result<Handoff<SnapshotRef>, SandboxError>> + Send {
        snapshots_unavailable()
    }

    fn release(
        &self,
        _request: ReleaseRequest,
    ) -> impl Future<Output = Result<Handoff<ReleaseDisposition>, SandboxError>> + Send {
        ready(Ok(self.handoff(ReleaseDisposition::Destroyed)))
    }

    fn resume(
        &self,
        _request: ResumeRequest,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send {
        snapshots_unavailable()
    }

    fn destroy(
        &self,
        _instance_id: InstanceId,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send {
        *self.state.lock().unwrap() = None;
        ready(Ok(()))
    }

    fn destroy_snapshot(
        &self,
        _snapshot_id: SnapshotId,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send {
        ready(Ok(()))
    }

    fn cleanup(
        &self,
        _request: CleanupRequest,
    ) -> impl Future<Output = Result<CleanupResult, SandboxError>> + Send {
        ready(Ok(CleanupResult::default()))
    }
}

fn minimum_request() -> SandboxProvisionRequest {
    let mut r = request();
    r.placement = Placement::Hosted;
    r.mounts = Mounts::none();
    r.profile.retention = RetentionMode::EphemeralZdr;
    r.profile.network = NetworkPolicy::None;
    r
}

#[test]
fn a_minimum_provider_round_trips_its_lifecycle() {
    let p = Minimum::new();
    let req = minimum_request();
    let handoff = block_on(p.provision(req.clone())).unwrap();
    check_instance_identity(
        &req,
        &handoff.value,
        p.capabilities(),
        InstanceState::Provisioning,
    )
    .unwrap();
    let id = handoff.value.instance_id.clone();
    let active = block_on(p.activate(id.clone())).unwrap().value;
    check_instance_identity(&req, &active, p.capabilities(), InstanceState::Active).unwrap();
    let cmd = ExecuteRequest {
        instance_id: id.clone(),
        command: command(1024),
    };
    let result = block_on(p.execute(cmd.clone())).unwrap();
    result.validate_against(&cmd.command).unwrap();
    let released = block_on(p.release(ReleaseRequest {
        instance_id: id.clone(),
        snapshot_expires_at: None,
    }))
    .unwrap();
    released.value.validate_for(active.retention()).unwrap();
    block_on(p.destroy(id.clone())).unwrap();
    block_on(p.destroy(id)).unwrap();
}

/// "`readFile` → SandboxCapabilityUnavailable{physically_contained_file_read}".
#[test]
fn minimum_read_file_fails_closed() {
    let p = Minimum::new();
    let req = ReadFileRequest::new(
        InstanceId::new("min-1").unwrap(),
        path("/mnt/session/outputs/a"),
        path("/mnt/session/outputs"),
        MaximumBytes::new(1).unwrap(),
    )
    .unwrap();
    assert_eq!(
        block_on(p.read_file(req)).unwrap_err(),
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
}

/// Optional members absent: a typed refusal at a known point.
#[test]
fn absent_optional_members_refuse_typed() {
    let p = Minimum::new();
    let id = InstanceId::new("min-1").unwrap();
    let err = block_on(p.list_dir(ListDirRequest {
        instance_id: id.clone(),
        root: path("/w"),
        max_entries: MaxEntries::MAX,
    }))
    .unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxLifecycleConflict {
            operation: Operation::ListDir,
            expected: vec![InstanceState::Active],
            actual: ConflictState::ListDirUnsupported,
        }
    );
    let err = block_on(p.list_project_dir(ListProjectDirRequest {
        instance_id: id.clone(),
        root: path("/w"),
        max_entries: MaxEntries::MAX,
    }))
    .unwrap_err();
    assert!(matches!(
        err,
        SandboxError::SandboxLifecycleConflict {
            actual: ConflictState::ListProjectDirUnsupported,
            ..
        }
    ));
    let err =
        block_on(p.read_files(ReadFilesRequest::new(id.clone(), path("/w"), vec![]).unwrap()))
            .unwrap_err();
    assert!(matches!(
        err,
        SandboxError::SandboxLifecycleConflict {
            actual: ConflictState::ReadFilesUnsupported,
            ..
        }
    ));
    let err = block_on(p.open_process(OpenProcessRequest {
        instance_id: id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new("sh").unwrap(),
            arguments: Arguments::default(),
            working_directory: None,
            environment: Environment::new(),
        },
    }))
    .err()
    .unwrap();
    assert!(matches!(
        err,
        SandboxError::SandboxLifecycleConflict {
            operation: Operation::OpenProcess,
            actual: ConflictState::OpenProcessUnsupported,
            ..
        }
    ));
    let err = block_on(
        p.begin_active_write(ActiveWriteRequest {
            instance_id: id,
            batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
                path: path("/w/a"),
                content: FileContent::default(),
                mode: FileMode::DEFAULT,
            }])
            .unwrap(),
        }),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "SandboxCapabilityUnavailable: requirement active_mount_write (capability active_mount_write)"
    );
    for op in Operation::MEMBERS {
        assert_eq!(op.absent_refusal().is_some(), op.is_optional(), "{op}");
    }
}

/// "The Runner invokes it at most once, and only when it rejects"; delivery
/// is at-least-once with idempotent effect.
#[test]
fn handoff_rollback_is_separate_from_the_value() {
    let p = Minimum::new();
    let (value, rollback) = block_on(p.provision(minimum_request()))
        .unwrap()
        .into_parts();
    drop(value); // The Runner rejected it; the compensation needs nothing from it.
    block_on(rollback.rollback()).unwrap();
    block_on(rollback.rollback()).unwrap();
    assert_eq!(p.rollbacks.load(Ordering::SeqCst), 2);
    let h = Handoff::new(1u8, NoRollback);
    assert_eq!(format!("{h:?}"), "Handoff { value: 1, .. }");
}

// ---------------------------------------------------------------- live process

struct VecSource(Vec<u8>);

impl ByteSource for VecSource {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let n = buf.len().min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0.drain(..n);
        Poll::Ready(Ok(n))
    }
}

struct VecSink(Arc<Mutex<(Vec<u8>, bool)>>);

impl ByteSink for VecSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, SandboxError>> {
        let mut s = self.0.lock().unwrap();
        if s.1 {
            return Poll::Ready(Err(SandboxError::operation_failed(
                Operation::OpenProcess,
                FailureReason::StreamClosed,
            )));
        }
        s.0.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), SandboxError>> {
        self.0.lock().unwrap().1 = true;
        Poll::Ready(Ok(()))
    }
}

struct Echo {
    evidence: SandboxProcessEvidence,
    input: Option<Pin<Box<dyn ByteSink>>>,
    output: Option<Pin<Box<dyn ByteSource>>>,
    destroyed: AtomicUsize,
}

impl LiveProcess for Echo {
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
        None
    }
    fn wait(&self) -> BoxFuture<'_, Result<ProcessExit, SandboxError>> {
        Box::pin(ready(Ok(ProcessExit::Code(ExitCode::SUCCESS))))
    }
    fn signal(&self, _signal: ControlSignal) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(ready(Ok(())))
    }
    fn destroy(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        self.destroyed.fetch_add(1, Ordering::SeqCst);
        Box::pin(ready(Ok(())))
    }
}

#[test]
fn live_process_traits_are_object_safe_and_runtime_free() {
    let sunk = Arc::new(Mutex::new((Vec::new(), false)));
    let mut process: Box<dyn LiveProcess> = Box::new(Echo {
        evidence: SandboxProcessEvidence {
            instance_id: InstanceId::new("i").unwrap(),
            provider: ProviderId::new("memory").unwrap(),
            placement: Placement::Local,
            process_id: ProcessId::new("p").unwrap(),
            started_at: ts("2026-01-01T00:00:00.000Z"),
            executable: Executable::new("cat").unwrap(),
            arguments: Arguments::default(),
            working_directory: None,
        },
        input: Some(Box::pin(VecSink(sunk.clone()))),
        output: Some(Box::pin(VecSource(b"frame\n".to_vec()))),
        destroyed: AtomicUsize::new(0),
    });
    let mut input = process.take_input().unwrap();
    assert!(process.take_input().is_none(), "taken once");
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    assert!(matches!(
        input.as_mut().poll_write(&mut cx, b"prompt"),
        Poll::Ready(Ok(6))
    ));
    assert!(matches!(
        input.as_mut().poll_close(&mut cx),
        Poll::Ready(Ok(()))
    ));
    assert!(matches!(
        input.as_mut().poll_write(&mut cx, b"late"),
        Poll::Ready(Err(_))
    ));
    assert_eq!(sunk.lock().unwrap().0, b"prompt");
    let mut output = process.take_output().unwrap();
    let mut buf = [0u8; 4];
    let mut got = Vec::new();
    loop {
        match output.as_mut().poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(0)) => break,
            Poll::Ready(Ok(n)) => got.extend_from_slice(&buf[..n]),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(got, b"frame\n");
    // wait settles once and is re-readable.
    assert_eq!(
        block_on(process.wait()).unwrap(),
        block_on(process.wait()).unwrap()
    );
    block_on(process.signal(ControlSignal::Sigterm)).unwrap();
    block_on(process.destroy()).unwrap();
    block_on(process.destroy()).unwrap();
    assert_eq!(
        SignalName::from(ControlSignal::Sigterm),
        SignalName::Sigterm
    );
}
