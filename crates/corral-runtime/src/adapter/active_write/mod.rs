//! `beginActiveWrite`: stage a bounded batch in provider custody, then
//! publish it atomically into one read-write mount of an `active` instance.
//!
//! Declared only when the envelope says `active_mount_write` (which needs
//! the backend's atomic `write_batch`); otherwise the contract's absent
//! refusal, `SandboxCapabilityUnavailable{active_mount_write}`.
//!
//! # Begin (refusals come before any body is accepted)
//!
//! 1. The instance must be `active`.
//! 2. **ZDR.** The journal lives in the instance's control root, i.e. on
//!    whatever storage the backend keeps the sandbox's files on. Only a
//!    provider whose every tier is `simulated` (the memory oracle: the tree
//!    is process memory) is known to keep them off durable host storage; for
//!    any other tier the adapter assumes the bodies would land on durable
//!    host storage and refuses an `ephemeral_zdr` instance's transaction as
//!    `SandboxCapabilityUnavailable{retention, capability:
//!    active_mount_write}` before a single body is written.
//! 3. **The owning mount.** Each target's owner is the deepest declared mount
//!    strictly containing it; all targets must have the same owner ("the
//!    deepest mount that owns every target" — an ancestor mount never
//!    authorizes a path inside a nested, separately owned mount), else
//!    `SandboxOperationFailed{outside_root}`; that mount must be
//!    `read_write`, else `SandboxOperationFailed{permission_denied}`.
//! 4. Recovery runs over the instance's other journals (dispatched ones are
//!    rolled back; open ones are never touched).
//! 5. The journal is written `open`, then every body is staged. The
//!    transaction is caller-owned and abortable while `open`.
//!
//! # Commit
//!
//! 1. The staged bodies are read back and checked against their digests.
//! 2. Rollback evidence is captured while the journal is still `open`: each
//!    target's current content (a regular file) or its absence; a target
//!    that is a directory, link or special file is refused
//!    (`not_regular_file`). Missing parent directories are created.
//! 3. The caller's dispatch marker is invoked — immediately before
//! 4. the journal is written `dispatched`.
//! 5. The batch is published with one `write_batch` (all or nothing). If it
//!    fails, the dispatch is rolled back at once (or left to recovery).
//! 6. The durable `committed` marker is written **before** any evidence is
//!    deleted,
//! 7. then the evidence and the journal are deleted (cleanup forward; a
//!    failure here leaves it to recovery, which only finishes it).
//!
//! Publication is atomic, so the adapter never pauses the workload and
//! holds no pause token. `rollback` aborts an `open` transaction (its
//! journal is marked `rolled_back` and deleted), recovers a `dispatched`
//! one, is idempotent, and refuses to undo a `committed` one
//! (`platform_rejected`).

mod journal;
mod recovery;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use corral_backend::{Backend, BatchFile, ErrorCode, FileType};
use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, BoxFuture, CapabilityField, DispatchMarker,
    FailureReason, JournalState, MountAccess, MountSpec, Operation, Requirement, RetentionMode,
    SandboxError, SandboxProviderCapabilities, Tier, TransactionId,
};

use super::ContractAdapter;
use super::errors::{Subject, absent, failed, on};
use super::provision::random_id;
use super::record::InstanceRecord;
use journal::{Body, Journal, JournalFile, Prior, Store, digest};

pub use recovery::RecoveryReport;
pub(crate) use recovery::recover;

const OP: Operation = Operation::BeginActiveWrite;

/// The transactions this adapter is driving right now, by id: their
/// journals are not recovery work.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    live: Mutex<HashSet<String>>,
}

impl InFlight {
    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether transaction `id` is being driven.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.live().contains(id)
    }

    fn enter(self: &Arc<Self>, id: &TransactionId) -> Flight {
        self.live().insert(id.to_string());
        Flight {
            in_flight: Arc::clone(self),
            id: id.to_string(),
        }
    }
}

/// A transaction being driven, until dropped.
struct Flight {
    in_flight: Arc<InFlight>,
    id: String,
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.in_flight.live().remove(&self.id);
    }
}

/// Whether an instance's journal would hold bodies on durable host storage
/// (see the module documentation).
pub(crate) fn journal_is_durable(envelope: &SandboxProviderCapabilities) -> bool {
    !envelope.tiers.iter().all(|t| *t == Tier::Simulated)
}

/// The deepest mount owning every target, which must be read-write.
fn owning_mount<'a>(
    record: &'a InstanceRecord,
    request: &ActiveWriteRequest,
) -> Result<&'a MountSpec, SandboxError> {
    let mut owner: Option<&MountSpec> = None;
    for file in request.batch.files() {
        let deepest = record
            .request
            .mounts
            .owner_of(&file.path)
            .filter(|m| m.path != file.path)
            .ok_or_else(|| failed(OP, FailureReason::OutsideRoot))?;
        match owner {
            Some(m) if m.path != deepest.path => {
                return Err(failed(OP, FailureReason::OutsideRoot));
            }
            _ => owner = Some(deepest),
        }
    }
    let owner = owner.ok_or_else(|| failed(OP, FailureReason::OutsideRoot))?;
    if owner.access != MountAccess::ReadWrite {
        return Err(failed(OP, FailureReason::PermissionDenied));
    }
    Ok(owner)
}

pub(crate) async fn begin<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: ActiveWriteRequest,
) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
    if !adapter.envelope.active_mount_write || adapter.backend.batch_write_ops().is_none() {
        return Err(absent(OP));
    }
    let located = adapter.locate(OP, &request.instance_id).await?;
    OP.check_state(located.record.state)?;
    if located.record.request.profile.retention == RetentionMode::EphemeralZdr
        && journal_is_durable(&adapter.envelope)
    {
        return Err(SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Retention,
            capability: Some(CapabilityField::ActiveMountWrite),
        });
    }
    let mount = owning_mount(&located.record, &request)?.path.clone();
    recover(adapter, OP, &located.sandbox_id, &request.instance_id).await?;
    let id = TransactionId::new(random_id(OP, "tx")?)
        .map_err(|_| failed(OP, FailureReason::PlatformRejected))?;
    let flight = adapter.in_flight.enter(&id);
    let store = Store {
        backend: adapter.backend.clone(),
        sandbox_id: located.sandbox_id,
        instance_id: request.instance_id.clone(),
    };
    let files = request.batch.files();
    let journal = Journal {
        transaction_id: id.clone(),
        instance_id: request.instance_id,
        mount,
        state: JournalState::Open,
        files: files
            .iter()
            .map(|f| JournalFile {
                path: f.path.clone(),
                mode: f.mode,
                sha256: digest(&f.content),
                prior: None,
            })
            .collect(),
    };
    let staged = async {
        store.save(OP, &journal).await?;
        for (n, file) in files.iter().enumerate() {
            store
                .write_body(OP, id.as_str(), Body::Staged, n, &file.content)
                .await?;
        }
        Ok::<(), SandboxError>(())
    };
    if let Err(e) = staged.await {
        let _ = store.remove(OP, id.as_str()).await;
        return Err(e);
    }
    drop(flight);
    Ok(Box::new(Transaction {
        store,
        id,
        state: Mutex::new(JournalState::Open),
        in_flight: adapter.in_flight.clone(),
    }))
}

/// An open transaction over one instance's journal.
struct Transaction<B> {
    store: Store<B>,
    id: TransactionId,
    state: Mutex<JournalState>,
    in_flight: Arc<InFlight>,
}

impl<B: Backend + 'static> Transaction<B> {
    fn set(&self, state: JournalState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    fn current(&self) -> JournalState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Captures each target's rollback evidence into the open journal.
    async fn capture_evidence(&self, journal: &mut Journal) -> Result<(), SandboxError> {
        let files = self.store.backend.files();
        let sandbox = &self.store.sandbox_id;
        let subject = Subject::Instance(&journal.instance_id);
        let id = self.id.as_str();
        for (n, file) in journal.files.iter_mut().enumerate() {
            let prior = match files.stat(sandbox, &file.path).await {
                Ok(stat) if stat.file_type == FileType::File => {
                    let bytes = files
                        .read(sandbox, &file.path)
                        .await
                        .map_err(on(OP, subject))?;
                    self.store
                        .write_body(OP, id, Body::Prior, n, &bytes)
                        .await?;
                    Prior::File {
                        mode: stat.mode,
                        sha256: digest(&bytes),
                    }
                }
                Ok(_) => return Err(failed(OP, FailureReason::NotRegularFile)),
                Err(e) if e.code() == ErrorCode::NotFound => {
                    if let Some(parent) = file.path.parent() {
                        files
                            .mkdir(sandbox, &parent, true)
                            .await
                            .map_err(on(OP, subject))?;
                    }
                    Prior::Absent
                }
                Err(e) => return Err(on(OP, subject)(e)),
            };
            file.prior = Some(prior);
        }
        Ok(())
    }

    async fn commit_with(&self, marker: &dyn DispatchMarker) -> Result<(), SandboxError> {
        let _flight = self.in_flight.enter(&self.id);
        let id = self.id.as_str();
        let Some(mut journal) = self.store.load(OP, id).await? else {
            return match self.current() {
                JournalState::Committed => Ok(()),
                _ => Err(failed(OP, FailureReason::IntegrityMismatch)),
            };
        };
        match journal.state {
            JournalState::Open => {}
            JournalState::Committed => {
                self.set(JournalState::Committed);
                return Ok(());
            }
            JournalState::Dispatched | JournalState::RolledBack => {
                return Err(failed(OP, FailureReason::PlatformRejected));
            }
        }
        let mut batch = Vec::with_capacity(journal.files.len());
        for (n, file) in journal.files.iter().enumerate() {
            let bytes = self
                .store
                .read_body(OP, id, Body::Staged, n, &file.sha256)
                .await?;
            batch.push(BatchFile {
                path: file.path.clone(),
                bytes,
                mode: Some(file.mode.bits()),
            });
        }
        self.capture_evidence(&mut journal).await?;
        self.store.save(OP, &journal).await?;
        marker.dispatched(&self.id);
        journal.state = JournalState::Dispatched;
        self.store.save(OP, &journal).await?;
        self.set(JournalState::Dispatched);
        let Some(publisher) = self.store.backend.batch_write_ops() else {
            return Err(failed(OP, FailureReason::PlatformRejected));
        };
        if let Err(e) = publisher.write_batch(&self.store.sandbox_id, batch).await {
            let error = on(OP, Subject::Instance(&journal.instance_id))(e);
            if recovery::roll_back(&self.store, OP, journal).await.is_ok() {
                self.set(JournalState::RolledBack);
            }
            return Err(error);
        }
        journal.state = JournalState::Committed;
        self.store.save(OP, &journal).await?;
        self.set(JournalState::Committed);
        // Cleanup forward; whatever is left is finished by recovery.
        let _ = self.store.remove(OP, id).await;
        Ok(())
    }

    async fn abort(&self) -> Result<(), SandboxError> {
        let _flight = self.in_flight.enter(&self.id);
        let id = self.id.as_str();
        let Some(mut journal) = self.store.load(OP, id).await? else {
            return match self.current() {
                JournalState::Committed => Err(failed(OP, FailureReason::PlatformRejected)),
                _ => {
                    self.set(JournalState::RolledBack);
                    Ok(())
                }
            };
        };
        match journal.state {
            JournalState::Open => {
                journal.state = JournalState::RolledBack;
                self.store.save(OP, &journal).await?;
                self.store.remove(OP, id).await?;
            }
            JournalState::Dispatched => recovery::roll_back(&self.store, OP, journal).await?,
            JournalState::RolledBack => self.store.remove(OP, id).await?,
            JournalState::Committed => return Err(failed(OP, FailureReason::PlatformRejected)),
        }
        self.set(JournalState::RolledBack);
        Ok(())
    }
}

impl<B: Backend + 'static> ActiveWriteTransaction for Transaction<B> {
    fn transaction_id(&self) -> &TransactionId {
        &self.id
    }

    fn state(&self) -> JournalState {
        self.current()
    }

    fn commit<'a>(
        &'a self,
        marker: &'a dyn DispatchMarker,
    ) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(self.commit_with(marker))
    }

    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(self.abort())
    }
}
