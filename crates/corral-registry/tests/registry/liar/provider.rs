//! The liar: a `SandboxProvider` that forwards every call to an honest
//! inner provider and then corrupts the answer as it was told.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::SystemTime;

use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, CleanupRequest, CleanupResult,
    CloneSnapshotRequest, Compensated, ExecuteRequest, FileContent, Handoff, InstanceId,
    ListDirRequest, ListDirResult, ListProjectDirRequest, ListProjectDirResult, LiveProcess,
    OpenProcessRequest, Operation, ReadFileRequest, ReadFileResult, ReadFilesRequest,
    ReadFilesResult, ReleaseDisposition, ReleaseRequest, ResumeRequest, SandboxError,
    SandboxExecutionResult, SandboxInstance, SandboxProvider, SandboxProviderCapabilities,
    SandboxProvisionRequest, SnapshotId, SnapshotRef, SnapshotRequest, Timestamp, WriteFileRequest,
};

use super::corrupt::{self, corrupt_clone, corrupt_evidence, corrupt_instance, corrupt_snapshot};
use super::ledger::{Ledger, RecordingRollback};
use super::lie::{InstanceIdLie, InstanceMember, Lie, ReleaseLie, SnapshotLie};
use super::process::LyingProcess;
use super::{results, wire};

/// A provider that lies. It wraps an honest provider `P` (in these tests
/// the memory backend behind the `ContractAdapter`), forwards every call to
/// it, records the call, and corrupts the honest answer according to the
/// [`Lie`]s it was told. Every rollback it hands out is recorded (and runs
/// the inner provider's own compensation), so a test can count exactly how
/// often the runtime undid an allocation.
pub struct Liar<P> {
    inner: P,
    envelope: SandboxProviderCapabilities,
    /// The envelope advertised after [`Liar::readvertise`]: "one honest
    /// envelope, unchanging for this revision" broken.
    readvertised: OnceLock<SandboxProviderCapabilities>,
    lies: Mutex<Vec<Lie>>,
    ledger: Arc<Ledger>,
    /// The honest instances the inner provider returned, by id (the liar
    /// fabricates values that must agree with them).
    instances: Mutex<BTreeMap<InstanceId, SandboxInstance>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl<P: SandboxProvider> Liar<P> {
    /// A liar advertising exactly the inner provider's envelope, telling no
    /// lie until told one.
    pub fn new(inner: P) -> Self {
        let envelope = inner.capabilities().clone();
        Self::advertising(inner, envelope)
    }

    /// A liar advertising `envelope` instead of the inner provider's.
    pub fn advertising(inner: P, envelope: SandboxProviderCapabilities) -> Self {
        Self {
            inner,
            envelope,
            readvertised: OnceLock::new(),
            lies: Mutex::new(Vec::new()),
            ledger: Arc::new(Ledger::default()),
            instances: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds a lie (builder form).
    pub fn telling(self, lie: Lie) -> Self {
        self.tell(lie);
        self
    }

    /// Adds a lie; it holds from the next call on.
    pub fn tell(&self, lie: Lie) {
        locked(&self.lies).push(lie);
    }

    /// From now on, advertises `envelope` instead of the one it started
    /// with (once; a second call is ignored).
    pub fn readvertise(&self, envelope: SandboxProviderCapabilities) {
        let _ = self.readvertised.set(envelope);
    }

    /// The record of calls, handoffs, rollbacks and process teardowns.
    pub fn ledger(&self) -> Arc<Ledger> {
        Arc::clone(&self.ledger)
    }

    /// The honest provider behind the liar.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The first lie `pick` selects.
    fn find<T>(&self, pick: impl Fn(Lie) -> Option<T>) -> Option<T> {
        locked(&self.lies).iter().copied().find_map(pick)
    }

    fn tells(&self, lie: Lie) -> bool {
        locked(&self.lies).contains(&lie)
    }

    fn remember(&self, instance: &SandboxInstance) {
        locked(&self.instances).insert(instance.instance_id.clone(), instance.clone());
    }

    fn remembered(&self, id: &InstanceId) -> Option<SandboxInstance> {
        locked(&self.instances).get(id).cloned()
    }

    /// Records the handoff, corrupts its value with `lie`, and wraps its
    /// rollback in a recording one.
    fn hand_off<T>(
        &self,
        operation: Compensated,
        handoff: Handoff<T>,
        lie: impl FnOnce(&mut T),
    ) -> Handoff<T> {
        let (mut value, rollback) = handoff.into_parts();
        lie(&mut value);
        self.ledger.record_handoff(operation);
        let hangs = self.tells(Lie::RollbackHangs);
        Handoff::new(
            value,
            RecordingRollback::new(operation, rollback, self.ledger(), hangs),
        )
    }

    fn instance_handoff(
        &self,
        operation: Compensated,
        member: InstanceMember,
        handoff: Handoff<SandboxInstance>,
    ) -> Handoff<SandboxInstance> {
        let honest_id = handoff.value.instance_id.clone();
        let field = self.find(|lie| match lie {
            Lie::Identity { member: m, field } if m == member => Some(field),
            _ => None,
        });
        let id_lie = self.find(|lie| match lie {
            Lie::InstanceId(lie) => Some(lie),
            _ => None,
        });
        let other_id = match (member, id_lie) {
            (InstanceMember::Activate, Some(InstanceIdLie::ActivateAnswersAnother)) => {
                Some(corrupt::lied_instance_id(&honest_id))
            }
            (InstanceMember::Provision, Some(InstanceIdLie::ProvisionReusesLive)) => Some(
                locked(&self.instances)
                    .keys()
                    .find(|id| **id != honest_id)
                    .cloned()
                    .expect("reusing a live id needs an earlier instance"),
            ),
            _ => None,
        };
        self.remember(&handoff.value);
        self.hand_off(operation, handoff, |instance| {
            if let Some(field) = field {
                corrupt_instance(instance, field);
            }
            if let Some(id) = other_id {
                instance.instance_id = id;
            }
        })
    }

    /// A `released` disposition the inner provider never produced: a
    /// snapshot that agrees with the instance in every other respect.
    fn fabricated_release(&self, request: &ReleaseRequest) -> ReleaseDisposition {
        let instance = self
            .remembered(&request.instance_id)
            .expect("the liar releases only instances it handed out");
        let snapshot = SnapshotRef::for_instance(
            SnapshotId::new("liar-snapshot").expect("a literal id"),
            &SnapshotRequest {
                instance_id: instance.instance_id.clone(),
                expires_at: request.snapshot_expires_at.unwrap_or(instance.expires_at),
            },
            &instance,
            Timestamp::from_system_time(SystemTime::now()).expect("the clock is in range"),
        );
        ReleaseDisposition::Released {
            snapshot: Box::new(snapshot),
        }
    }
}

impl<P: SandboxProvider> SandboxProvider for Liar<P> {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        self.readvertised.get().unwrap_or(&self.envelope)
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.ledger.record_call(Operation::Provision);
        let handoff = self.inner.provision(request).await?;
        Ok(self.instance_handoff(Compensated::Provision, InstanceMember::Provision, handoff))
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        self.ledger.record_call(Operation::WriteFile);
        self.inner.write_file(request).await
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        self.ledger.record_call(Operation::BeginActiveWrite);
        self.inner.begin_active_write(request).await
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.ledger.record_call(Operation::Activate);
        let handoff = self.inner.activate(instance_id).await?;
        Ok(self.instance_handoff(Compensated::Activate, InstanceMember::Activate, handoff))
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        self.ledger.record_call(Operation::Execute);
        let limit = request.command.output_limit_bytes.get();
        let mut result = self.inner.execute(request).await?;
        for lie in locked(&self.lies).iter().copied() {
            match lie {
                Lie::OversizedStream(stream) => results::oversize(&mut result, stream, limit),
                Lie::TruncatedShort(stream) => results::truncate_short(&mut result, stream, limit),
                _ => {}
            }
        }
        match self.find(|lie| match lie {
            Lie::Wire(wire) => Some(wire),
            _ => None,
        }) {
            Some(lie) => wire::deliver(&result, lie),
            None => Ok(result),
        }
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        self.ledger.record_call(Operation::ReadFile);
        let maximum = request.maximum_bytes().get();
        let mut result = self.inner.read_file(request).await?;
        if self.tells(Lie::ReadFileOverMaximum) {
            result.content = FileContent::new(results::bytes(maximum + 1))
                .expect("maximum_bytes + 1 stays within the 16 MiB file bound");
        }
        Ok(result)
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        self.ledger.record_call(Operation::ReadFiles);
        let members = request.files().to_vec();
        let mut result = self.inner.read_files(request).await?;
        if let Some(lie) = self.find(|lie| match lie {
            Lie::ReadFiles(lie) => Some(lie),
            _ => None,
        }) {
            results::corrupt_batch(&mut result, &members, lie);
        }
        Ok(result)
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        self.ledger.record_call(Operation::ListDir);
        if self.tells(Lie::ListDirRefuses) {
            return Err(Operation::ListDir
                .absent_refusal()
                .expect("listDir is an optional member"));
        }
        let (root, max) = (request.root.clone(), request.max_entries.get());
        let mut result = self.inner.list_dir(request).await?;
        if self.tells(Lie::ListDirOverMaxEntries) {
            results::overfill_listing(&mut result, &root, max);
        }
        Ok(result)
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        self.ledger.record_call(Operation::ListProjectDir);
        let (root, max) = (request.root.clone(), request.max_entries.get());
        let mut result = self.inner.list_project_dir(request).await?;
        if let Some(lie) = self.find(|lie| match lie {
            Lie::ProjectListing(lie) => Some(lie),
            _ => None,
        }) {
            results::corrupt_project_listing(&mut result, &root, max, lie);
        }
        Ok(result)
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.ledger.record_call(Operation::Snapshot);
        let handoff = self.inner.snapshot(request).await?;
        let lie = self.find(|lie| match lie {
            Lie::Snapshot(lie) => Some(lie),
            _ => None,
        });
        Ok(self.hand_off(Compensated::Snapshot, handoff, |snapshot| {
            if let Some(lie) = lie {
                corrupt_snapshot(snapshot, lie);
            }
        }))
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.ledger.record_call(Operation::CloneSnapshot);
        let source = request.source.clone();
        let handoff = self.inner.clone_snapshot(request).await?;
        let lie = self.find(|lie| match lie {
            Lie::Clone(lie) => Some(lie),
            _ => None,
        });
        Ok(self.hand_off(Compensated::CloneSnapshot, handoff, |clone| {
            if let Some(lie) = lie {
                corrupt_clone(clone, &source, lie);
            }
        }))
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.ledger.record_call(Operation::Release);
        let lie = self.find(|lie| match lie {
            Lie::Release(lie) => Some(lie),
            _ => None,
        });
        let fabricated = match lie {
            Some(ReleaseLie::ReleasedOnZdr) => Some(self.fabricated_release(&request)),
            Some(ReleaseLie::DestroyedOnDurable) => Some(ReleaseDisposition::Destroyed),
            Some(ReleaseLie::SettledSnapshotMovesExpiry) | None => None,
        };
        let moves_expiry = lie == Some(ReleaseLie::SettledSnapshotMovesExpiry);
        let handoff = self.inner.release(request).await?;
        Ok(self.hand_off(Compensated::Release, handoff, |disposition| {
            if let Some(fabricated) = fabricated {
                *disposition = fabricated;
            }
            if let (true, ReleaseDisposition::Released { snapshot }) = (moves_expiry, disposition) {
                corrupt_snapshot(snapshot, SnapshotLie::MovedExpiresAt);
            }
        }))
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.ledger.record_call(Operation::Resume);
        let handoff = self.inner.resume(request).await?;
        Ok(self.instance_handoff(Compensated::Resume, InstanceMember::Resume, handoff))
    }

    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        self.ledger.record_call(Operation::Destroy);
        self.inner.destroy(instance_id).await
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        self.ledger.record_call(Operation::DestroySnapshot);
        self.inner.destroy_snapshot(snapshot_id).await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        self.ledger.record_call(Operation::Cleanup);
        self.inner.cleanup(request).await
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        self.ledger.record_call(Operation::OpenProcess);
        let instance_id = request.instance_id.clone();
        let process = self.inner.open_process(request).await?;
        let mut evidence = process.evidence().clone();
        if let Some(lie) = self.find(|lie| match lie {
            Lie::Evidence(lie) => Some(lie),
            _ => None,
        }) {
            let instance = self
                .remembered(&instance_id)
                .expect("the liar opens processes only in instances it handed out");
            corrupt_evidence(&mut evidence, lie, &instance);
        }
        let hangs = self.tells(Lie::ProcessDestroyHangs);
        Ok(Box::new(LyingProcess::new(
            process,
            evidence,
            self.ledger(),
            hangs,
        )))
    }
}
