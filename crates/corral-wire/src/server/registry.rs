//! What the server holds between requests: unsettled handoffs, open
//! active-write transactions, live processes, and the instances it created
//! (so that a shutdown can destroy the ones that are not durable).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use corral_contract::{
    ActiveWriteTransaction, InstanceId, LiveProcess, ProcessId, RetentionMode, Rollback,
    SandboxError, SandboxInstance, SandboxProvider, TransactionId,
};

use super::process::Live;

use crate::protocol::{HANDOFF_WINDOW_SECONDS, HandoffId};

/// What a graceful shutdown did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Non-durable instances it destroyed.
    pub destroyed: Vec<InstanceId>,
    /// Durable instances it left for a later `resume`/`cleanup`.
    pub kept: Vec<InstanceId>,
    /// Instances whose destroy failed, with the error.
    pub failed: Vec<(InstanceId, SandboxError)>,
    /// Live processes it destroyed.
    pub processes: usize,
}

/// Locks a mutex, recovering the data of a poisoned one (every critical
/// section here leaves the map consistent).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Held = (Box<dyn Rollback>, Instant);

#[derive(Default)]
pub(crate) struct Registry {
    next: AtomicU64,
    handoffs: Mutex<HashMap<HandoffId, Held>>,
    transactions: Mutex<HashMap<TransactionId, Arc<dyn ActiveWriteTransaction>>>,
    processes: Mutex<HashMap<u64, Arc<dyn LiveProcess>>>,
    instances: Mutex<HashMap<InstanceId, RetentionMode>>,
    sessions: Mutex<HashMap<ProcessId, Arc<Live>>>,
}

impl Registry {
    fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Holds a compensation until the client rolls it back or settles it;
    /// first forgets those older than the handoff window.
    pub(crate) fn hold(&self, rollback: Box<dyn Rollback>) -> HandoffId {
        let id = HandoffId(format!("h{}", self.next_id()));
        let window = Duration::from_secs(HANDOFF_WINDOW_SECONDS);
        let mut held = lock(&self.handoffs);
        held.retain(|_, (_, at)| at.elapsed() < window);
        held.insert(id.clone(), (rollback, Instant::now()));
        id
    }

    /// Takes a held compensation (at most once).
    pub(crate) fn take(&self, id: &HandoffId) -> Option<Box<dyn Rollback>> {
        lock(&self.handoffs).remove(id).map(|(r, _)| r)
    }

    pub(crate) fn open_transaction(&self, tx: Arc<dyn ActiveWriteTransaction>) {
        lock(&self.transactions).insert(tx.transaction_id().clone(), tx);
    }

    pub(crate) fn transaction(
        &self,
        id: &TransactionId,
    ) -> Option<Arc<dyn ActiveWriteTransaction>> {
        lock(&self.transactions).get(id).cloned()
    }

    /// Forgets a transaction whose journal is terminal.
    pub(crate) fn settle_transaction(&self, id: &TransactionId) {
        let mut txs = lock(&self.transactions);
        if txs.get(id).is_some_and(|t| t.state().is_terminal()) {
            txs.remove(id);
        }
    }

    pub(crate) fn add_process(&self, process: Arc<dyn LiveProcess>) -> u64 {
        let key = self.next_id();
        lock(&self.processes).insert(key, process);
        key
    }

    pub(crate) fn remove_process(&self, key: u64) {
        lock(&self.processes).remove(&key);
    }

    /// Records a live process session, for a `replay` and the shutdown.
    pub(crate) fn add_session(&self, id: ProcessId, live: Arc<Live>) {
        lock(&self.sessions).insert(id, live);
    }

    /// The session of a process, if it is still live.
    pub(crate) fn session(&self, id: &ProcessId) -> Option<Arc<Live>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Forgets a session that ended for good.
    pub(crate) fn remove_session(&self, id: &ProcessId) {
        lock(&self.sessions).remove(id);
    }

    /// Records an instance the provider returned.
    pub(crate) fn track(&self, instance: &SandboxInstance) {
        lock(&self.instances).insert(instance.instance_id.clone(), instance.retention());
    }

    /// Forgets an instance that was destroyed or released.
    pub(crate) fn untrack(&self, id: &InstanceId) {
        lock(&self.instances).remove(id);
    }

    /// The graceful part of a shutdown.
    pub(crate) async fn shut_down<P: SandboxProvider>(&self, provider: &P) -> ShutdownReport {
        let mut report = ShutdownReport::default();
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, l)| l).collect();
        for live in sessions {
            live.end().await;
        }
        let processes: Vec<_> = lock(&self.processes).drain().map(|(_, p)| p).collect();
        for process in processes {
            let _ = process.destroy().await;
            report.processes += 1;
        }
        // Unsettled handoffs: the client received each value and its
        // runtime owns it now or will roll it back through cleanup; the
        // compensations are dropped, not run.
        lock(&self.handoffs).clear();
        let txs: Vec<_> = lock(&self.transactions).drain().map(|(_, t)| t).collect();
        for tx in txs {
            if !tx.state().is_terminal() {
                let _ = tx.rollback().await;
            }
        }
        let mut instances: Vec<_> = lock(&self.instances).drain().collect();
        instances.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, retention) in instances {
            match retention {
                RetentionMode::Durable => report.kept.push(id),
                RetentionMode::EphemeralZdr => match provider.destroy(id.clone()).await {
                    Ok(()) | Err(SandboxError::SandboxInstanceNotFound { .. }) => {
                        report.destroyed.push(id)
                    }
                    Err(e) => report.failed.push((id, e)),
                },
            }
        }
        report
    }
}
