//! [`Fake`]: an honest in-memory provider by default, counting every call,
//! with knobs that make one result lie.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use corral_contract::*;
use sha2::{Digest as _, Sha256};

use super::process::{FakeProcess, ProcessScript};
use super::rollback::{FakeRollback, RollbackMode};
use super::ts;
pub use super::world::{Entry, Log, Undo, World};

pub type Tamper<T> = Arc<dyn Fn(&mut T) + Send + Sync>;
pub type InstanceTamper = Arc<dyn Fn(Operation, &mut SandboxInstance) + Send + Sync>;

/// The lies the fake tells, one knob per result.
#[derive(Clone, Default)]
pub struct Knobs {
    pub instance: Option<InstanceTamper>,
    pub snapshot: Option<Tamper<SnapshotRef>>,
    pub execution: Option<Tamper<SandboxExecutionResult>>,
    pub read_file: Option<Tamper<ReadFileResult>>,
    pub read_files: Option<Tamper<ReadFilesResult>>,
    pub list_dir: Option<Tamper<ListDirResult>>,
    pub project: Option<Tamper<ListProjectDirResult>>,
    pub disposition: Option<Tamper<ReleaseDisposition>>,
    pub rollback: RollbackMode,
    pub process: ProcessScript,
    pub swept: Vec<InstanceId>,
}

/// A hand-made provider over an in-memory world.
pub struct Fake {
    envelope: SandboxProviderCapabilities,
    changed: Option<SandboxProviderCapabilities>,
    switched: AtomicBool,
    pub log: Arc<Log>,
    world: Arc<Mutex<World>>,
    knobs: Mutex<Knobs>,
}

fn tamper<T>(knob: &Option<Tamper<T>>, value: &mut T) {
    if let Some(f) = knob {
        f(value);
    }
}

fn sha256(bytes: &[u8]) -> corral_contract::Digest {
    corral_contract::Digest::from_sha256_bytes(Sha256::digest(bytes).into())
}

impl Fake {
    pub fn new(envelope: SandboxProviderCapabilities) -> Self {
        Self {
            envelope,
            changed: None,
            switched: AtomicBool::new(false),
            log: Arc::default(),
            world: Arc::default(),
            knobs: Mutex::default(),
        }
    }

    /// An envelope to switch to later ([`Fake::switch_envelope`]).
    pub fn with_later_envelope(mut self, later: SandboxProviderCapabilities) -> Self {
        self.changed = Some(later);
        self
    }

    pub fn switch_envelope(&self) {
        self.switched.store(true, Ordering::SeqCst);
    }

    /// Changes the knobs.
    pub fn knobs(&self, change: impl FnOnce(&mut Knobs)) {
        change(&mut self.knobs.lock().unwrap());
    }

    pub fn tamper_instance(
        &self,
        f: impl Fn(Operation, &mut SandboxInstance) + Send + Sync + 'static,
    ) {
        self.knobs(|k| k.instance = Some(Arc::new(f)));
    }

    pub fn put(&self, instance: &InstanceId, p: &str, entry: Entry) {
        let key = (instance.clone(), super::path(p));
        self.world.lock().unwrap().files.insert(key, entry);
    }

    pub fn has_instance(&self, instance: &InstanceId) -> bool {
        self.world.lock().unwrap().instances.contains_key(instance)
    }

    pub fn file(&self, instance: &InstanceId, p: &str) -> Option<Vec<u8>> {
        match self
            .world
            .lock()
            .unwrap()
            .files
            .get(&(instance.clone(), super::path(p)))
        {
            Some(Entry::File(bytes)) => Some(bytes.clone()),
            _ => None,
        }
    }

    fn k(&self) -> Knobs {
        self.knobs.lock().unwrap().clone()
    }

    fn rollback(&self, operation: Compensated, undo: Undo) -> FakeRollback {
        FakeRollback {
            operation,
            mode: self.k().rollback,
            undo,
            world: self.world.clone(),
            log: self.log.clone(),
        }
    }

    fn instance(&self, id: &InstanceId) -> Result<SandboxInstance, SandboxError> {
        self.world
            .lock()
            .unwrap()
            .instances
            .get(id)
            .cloned()
            .ok_or_else(|| SandboxError::SandboxInstanceNotFound {
                instance_id: id.clone(),
            })
    }

    fn entry(&self, instance: &InstanceId, p: &SandboxPath) -> Option<Entry> {
        self.world
            .lock()
            .unwrap()
            .files
            .get(&(instance.clone(), p.clone()))
            .cloned()
    }

    fn read_one(&self, instance: &InstanceId, member: &ReadFilesMember) -> ReadFileOutcome {
        let path = member.path.clone();
        match self.entry(instance, &member.path) {
            None => ReadFileOutcome::Missing { path },
            Some(Entry::Escape) => ReadFileOutcome::Refused {
                path,
                reason: ReadRefusal::OutsideRoot,
            },
            Some(Entry::Directory) => ReadFileOutcome::Refused {
                path,
                reason: ReadRefusal::NotRegularFile,
            },
            Some(Entry::File(bytes)) if bytes.len() as u64 > member.maximum_bytes.get() => {
                ReadFileOutcome::TooLarge {
                    path,
                    size: FileSize::of_len(bytes.len()),
                    limit: member.maximum_bytes,
                }
            }
            Some(Entry::File(bytes)) => ReadFileOutcome::Ok {
                path,
                size: FileSize::of_len(bytes.len()),
                content: FileContent::new(bytes).unwrap(),
            },
        }
    }

    fn files_under(&self, instance: &InstanceId, root: &SandboxPath) -> Vec<(SandboxPath, Entry)> {
        let world = self.world.lock().unwrap();
        let mut found: Vec<(SandboxPath, Entry)> = world
            .files
            .iter()
            .filter(|((i, p), _)| i == instance && p.starts_with(root) && p != root)
            .map(|((_, p), e)| (p.clone(), e.clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }
}

impl SandboxProvider for Fake {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        match (&self.changed, self.switched.load(Ordering::SeqCst)) {
            (Some(changed), true) => changed,
            _ => &self.envelope,
        }
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.log.call(Operation::Provision);
        let id = InstanceId::new(self.world.lock().unwrap().next("inst")).unwrap();
        let mut instance = SandboxInstance::for_request(
            id.clone(),
            &request,
            self.capabilities(),
            InstanceState::Provisioning,
        );
        self.world
            .lock()
            .unwrap()
            .instances
            .insert(id.clone(), instance.clone());
        if let Some(f) = &self.k().instance {
            f(Operation::Provision, &mut instance);
        }
        Ok(Handoff::new(
            instance,
            self.rollback(Compensated::Provision, Undo::Instance(id)),
        ))
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        self.log.call(Operation::WriteFile);
        self.instance(&request.instance_id)?;
        let bytes = request.content.into_vec();
        self.world
            .lock()
            .unwrap()
            .files
            .insert((request.instance_id, request.path), Entry::File(bytes));
        Ok(())
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        self.log.call(Operation::BeginActiveWrite);
        if !self.capabilities().active_mount_write {
            return Err(Operation::BeginActiveWrite.absent_refusal().unwrap());
        }
        let _ = request;
        Ok(Box::new(Transaction {
            id: TransactionId::new("tx-1").unwrap(),
        }))
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.log.call(Operation::Activate);
        let mut instance = self
            .instance(&instance_id)?
            .with_state(InstanceState::Active);
        self.world
            .lock()
            .unwrap()
            .instances
            .insert(instance_id, instance.clone());
        if let Some(f) = &self.k().instance {
            f(Operation::Activate, &mut instance);
        }
        Ok(Handoff::new(
            instance,
            self.rollback(Compensated::Activate, Undo::Nothing),
        ))
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        self.log.call(Operation::Execute);
        self.instance(&request.instance_id)?;
        let mut result = SandboxExecutionResult {
            exit: ExitCause::Code(0u8.into()),
            interval: Interval::new(
                ts("2026-11-29T19:00:00.000Z"),
                ts("2026-11-29T19:00:01.000Z"),
            )
            .unwrap(),
            stdout: StreamCapture {
                content: OutputBytes::new(b"hi\n".to_vec()).unwrap(),
                truncated: false,
            },
            stderr: StreamCapture::default(),
        };
        tamper(&self.k().execution, &mut result);
        Ok(result)
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        self.log.call(Operation::ReadFile);
        self.log.reads.lock().unwrap().push(request.clone());
        self.instance(request.instance_id())?;
        let failed = |reason| SandboxError::operation_failed(Operation::ReadFile, reason);
        let mut result = match self.entry(request.instance_id(), request.path()) {
            None => return Err(failed(FailureReason::NotFound)),
            Some(Entry::Escape) => return Err(failed(FailureReason::OutsideRoot)),
            Some(Entry::Directory) => return Err(failed(FailureReason::NotRegularFile)),
            Some(Entry::File(bytes)) if bytes.len() as u64 > request.maximum_bytes().get() => {
                return Err(SandboxError::SandboxFileTooLarge {
                    path: request.path().clone(),
                    limit: request.maximum_bytes().get(),
                    actual: bytes.len() as u64,
                });
            }
            Some(Entry::File(bytes)) => ReadFileResult {
                content: FileContent::new(bytes).unwrap(),
            },
        };
        tamper(&self.k().read_file, &mut result);
        Ok(result)
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        self.log.call(Operation::ReadFiles);
        self.log.read_batches.lock().unwrap().push(request.clone());
        if !self.capabilities().read_files {
            return Err(Operation::ReadFiles.absent_refusal().unwrap());
        }
        self.instance(request.instance_id())?;
        let files = request
            .files()
            .iter()
            .map(|m| self.read_one(request.instance_id(), m))
            .collect();
        let mut result = ReadFilesResult { files };
        tamper(&self.k().read_files, &mut result);
        Ok(result)
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        self.log.call(Operation::ListDir);
        if !self.capabilities().list_dir {
            return Err(Operation::ListDir.absent_refusal().unwrap());
        }
        let entries = self
            .files_under(&request.instance_id, &request.root)
            .into_iter()
            .filter_map(|(path, entry)| match entry {
                Entry::File(bytes) => Some(ListDirEntry {
                    path,
                    size: FileSize::of_len(bytes.len()),
                    sha256: sha256(&bytes),
                }),
                Entry::Escape | Entry::Directory => None,
            })
            .collect();
        let mut result = ListDirResult { entries };
        tamper(&self.k().list_dir, &mut result);
        Ok(result)
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        self.log.call(Operation::ListProjectDir);
        if !self.capabilities().list_project_dir {
            return Err(Operation::ListProjectDir.absent_refusal().unwrap());
        }
        let entries = self
            .files_under(&request.instance_id, &request.root)
            .into_iter()
            .filter_map(|(path, entry)| match entry {
                Entry::File(bytes) => Some(ProjectEntry::File {
                    path,
                    size: FileSize::of_len(bytes.len()),
                    sha256: sha256(&bytes),
                }),
                Entry::Escape => Some(ProjectEntry::Symlink { path }),
                Entry::Directory => None,
            })
            .collect();
        let mut result = ListProjectDirResult {
            entries,
            complete: true,
        };
        tamper(&self.k().project, &mut result);
        Ok(result)
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.log.call(Operation::Snapshot);
        let source = self.instance(&request.instance_id)?;
        let id = SnapshotId::new(self.world.lock().unwrap().next("snap")).unwrap();
        let mut snapshot = SnapshotRef::for_instance(
            id.clone(),
            &request,
            &source,
            ts("2026-11-29T19:30:00.000Z"),
        );
        self.world
            .lock()
            .unwrap()
            .snapshots
            .insert(id.clone(), snapshot.clone());
        tamper(&self.k().snapshot, &mut snapshot);
        Ok(Handoff::new(
            snapshot,
            self.rollback(Compensated::Snapshot, Undo::Snapshot(id)),
        ))
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.log.call(Operation::CloneSnapshot);
        let id = SnapshotId::new(self.world.lock().unwrap().next("snap")).unwrap();
        let mut clone = request.source.cloned(
            id.clone(),
            request.target_session_id.clone(),
            request.source.created_at,
        );
        self.world
            .lock()
            .unwrap()
            .snapshots
            .insert(id.clone(), clone.clone());
        tamper(&self.k().snapshot, &mut clone);
        Ok(Handoff::new(
            clone,
            self.rollback(Compensated::CloneSnapshot, Undo::Snapshot(id)),
        ))
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.log.call(Operation::Release);
        let instance = self.instance(&request.instance_id)?;
        self.world
            .lock()
            .unwrap()
            .instances
            .remove(&request.instance_id);
        let (mut disposition, undo) = match instance.retention() {
            RetentionMode::EphemeralZdr => (ReleaseDisposition::Destroyed, Undo::Nothing),
            RetentionMode::Durable => {
                let id = SnapshotId::new(self.world.lock().unwrap().next("snap")).unwrap();
                let settle = SnapshotRequest {
                    instance_id: request.instance_id.clone(),
                    expires_at: request.snapshot_expires_at.unwrap_or(instance.expires_at),
                };
                let snapshot = SnapshotRef::for_instance(
                    id.clone(),
                    &settle,
                    &instance,
                    ts("2026-11-29T19:40:00.000Z"),
                );
                (
                    ReleaseDisposition::Released {
                        snapshot: Box::new(snapshot),
                    },
                    Undo::Snapshot(id),
                )
            }
        };
        tamper(&self.k().disposition, &mut disposition);
        Ok(Handoff::new(
            disposition,
            self.rollback(Compensated::Release, undo),
        ))
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.log.call(Operation::Resume);
        let id = InstanceId::new(self.world.lock().unwrap().next("inst")).unwrap();
        let mut instance = SandboxInstance::for_request(
            id.clone(),
            &request.request,
            self.capabilities(),
            InstanceState::Active,
        );
        self.world
            .lock()
            .unwrap()
            .instances
            .insert(id.clone(), instance.clone());
        if let Some(f) = &self.k().instance {
            f(Operation::Resume, &mut instance);
        }
        Ok(Handoff::new(
            instance,
            self.rollback(Compensated::Resume, Undo::Instance(id)),
        ))
    }

    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        self.log.call(Operation::Destroy);
        self.world.lock().unwrap().instances.remove(&instance_id);
        Ok(())
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        self.log.call(Operation::DestroySnapshot);
        self.world.lock().unwrap().snapshots.remove(&snapshot_id);
        Ok(())
    }

    async fn cleanup(&self, _request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        self.log.call(Operation::Cleanup);
        let swept = self.k().swept;
        let mut world = self.world.lock().unwrap();
        for id in &swept {
            world.instances.remove(id);
        }
        Ok(CleanupResult {
            instances: swept,
            snapshots: Vec::new(),
        })
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        self.log.call(Operation::OpenProcess);
        if !self.capabilities().open_process {
            return Err(Operation::OpenProcess.absent_refusal().unwrap());
        }
        let instance = self.instance(&request.instance_id)?;
        let script = self.k().process;
        let mut evidence = SandboxProcessEvidence {
            instance_id: instance.instance_id.clone(),
            provider: instance.provider.clone(),
            placement: instance.placement,
            process_id: ProcessId::new("proc-1").unwrap(),
            started_at: ts("2026-11-29T19:00:00.000Z"),
            executable: request.process.executable.clone(),
            arguments: request.process.arguments.clone(),
            working_directory: request.process.working_directory.clone(),
        };
        if let Some(f) = &script.evidence {
            f(&mut evidence);
        }
        Ok(Box::new(FakeProcess::new(
            evidence,
            &script,
            self.log.process.clone(),
        )))
    }
}

/// A transaction that publishes nothing: the runtime only hands it over.
struct Transaction {
    id: TransactionId,
}

impl ActiveWriteTransaction for Transaction {
    fn transaction_id(&self) -> &TransactionId {
        &self.id
    }

    fn state(&self) -> JournalState {
        JournalState::Open
    }

    fn commit<'a>(
        &'a self,
        marker: &'a dyn DispatchMarker,
    ) -> BoxFuture<'a, Result<(), SandboxError>> {
        marker.dispatched(&self.id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
