//! Active-write recovery: what happens to journals whose transaction is no
//! longer driven by anyone (its runtime crashed, its caller went away).
//!
//! | journal state | recovery |
//! |---|---|
//! | `open` | left alone: "another transaction's merely staged open journal is never rolled back" — it stays caller-owned |
//! | `dispatched` | rolled back: every target gets its captured prior content back (atomically, through `write_batch`), every target that did not exist is removed; then `rolled_back` is recorded and the journal deleted |
//! | `committed` | cleanup finished forward: the remaining evidence and the journal are deleted; nothing is restored |
//! | `rolled_back` | cleanup finished: the journal is deleted |
//! | no `journal.json` | the directory is deleted: bodies are staged only after the journal is written, so it holds nothing |
//!
//! Rollback evidence is complete before a journal becomes `dispatched`, and
//! deleted only after `committed` is recorded, so recovery never restores
//! from partially deleted evidence; evidence that does not match its digest
//! stops the recovery of that journal with `integrity_mismatch` (it stays
//! `dispatched`) rather than restoring something else. Transactions this
//! adapter is driving right now are skipped.

use crate::adapter::at;
use corral_backend::{Backend, BatchFile, ErrorCode};
use corral_contract::{
    FailureReason, InstanceId, JournalState, Operation, SandboxError, TransactionId,
};

use super::journal::{Body, Journal, Prior, Store};
use crate::adapter::ContractAdapter;
use crate::adapter::errors::{Subject, failed, on};

/// What one recovery pass did, by transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Dispatched, uncommitted transactions rolled back.
    pub rolled_back: Vec<TransactionId>,
    /// Committed (or already rolled back) transactions whose cleanup was
    /// finished.
    pub finished: Vec<TransactionId>,
    /// Open transactions left to their owner.
    pub left_open: Vec<TransactionId>,
}

/// Puts every target of `journal` back as its evidence says it was.
pub(crate) async fn restore<B: Backend>(
    store: &Store<B>,
    op: Operation,
    journal: &Journal,
) -> Result<(), SandboxError> {
    let id = journal.transaction_id.as_str();
    let mut writes = Vec::new();
    let mut removals = Vec::new();
    for (n, file) in journal.files.iter().enumerate() {
        match &file.prior {
            Some(Prior::File { mode, sha256 }) => {
                let bytes = store.read_body(op, id, Body::Prior, n, sha256).await?;
                writes.push(BatchFile {
                    path: file.path.clone(),
                    bytes,
                    mode: Some(*mode),
                });
            }
            Some(Prior::Absent) => removals.push(file.path.as_str()),
            // A dispatched journal always carries its evidence; without it
            // there is nothing trustworthy to restore from.
            None => return Err(failed(op, FailureReason::IntegrityMismatch)),
        }
    }
    let subject = Subject::Instance(&journal.instance_id);
    let backend = &store.backend;
    if !writes.is_empty() {
        match backend.batch_write_ops() {
            Some(batch) => batch
                .write_batch(&store.sandbox_id, writes)
                .await
                .map_err(on(op, subject))?,
            None => {
                for w in writes {
                    backend
                        .files()
                        .write(&store.sandbox_id, &w.path, &w.bytes, w.mode)
                        .await
                        .map_err(on(op, subject))?;
                }
            }
        }
    }
    for path in removals {
        let path = at(path).map_err(on(op, subject))?;
        match backend
            .files()
            .remove(&store.sandbox_id, &path, false)
            .await
        {
            Ok(()) => {}
            Err(e) if e.code() == ErrorCode::NotFound => {}
            Err(e) => return Err(on(op, subject)(e)),
        }
    }
    Ok(())
}

/// Rolls back a dispatched journal and records it: restore, `rolled_back`,
/// delete.
pub(crate) async fn roll_back<B: Backend>(
    store: &Store<B>,
    op: Operation,
    mut journal: Journal,
) -> Result<(), SandboxError> {
    restore(store, op, &journal).await?;
    journal.state = JournalState::RolledBack;
    store.save(op, &journal).await?;
    store.remove(op, journal.transaction_id.as_str()).await
}

/// One recovery pass over the journals of sandbox `sandbox_id`.
pub(crate) async fn recover<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    op: Operation,
    sandbox_id: &str,
    instance_id: &InstanceId,
) -> Result<RecoveryReport, SandboxError> {
    let store = Store {
        backend: adapter.backend.clone(),
        sandbox_id: sandbox_id.to_owned(),
        instance_id: instance_id.clone(),
    };
    let mut report = RecoveryReport::default();
    for name in store.list(op).await? {
        if adapter.in_flight.contains(&name) {
            continue;
        }
        let Some(journal) = store.load(op, &name).await? else {
            store.remove(op, &name).await?;
            continue;
        };
        if journal.transaction_id.as_str() != name {
            return Err(failed(op, FailureReason::IntegrityMismatch));
        }
        let id = journal.transaction_id.clone();
        match journal.state {
            JournalState::Open => report.left_open.push(id),
            JournalState::Dispatched => {
                roll_back(&store, op, journal).await?;
                report.rolled_back.push(id);
            }
            JournalState::Committed | JournalState::RolledBack => {
                store.remove(op, &name).await?;
                report.finished.push(id);
            }
        }
    }
    Ok(report)
}
