//! What the runtime remembers per instance.
//!
//! Each instance the runtime provisioned, activated or resumed is tracked
//! with the request it was cross-checked against and the instance it
//! accepted (its state, mounts and profile). Ending it (`destroy`, `release`,
//! a compensated allocation, a cleanup sweep) forgets that record and keeps
//! only a small tombstone, so that a later call names the ending precisely
//! (`SandboxLifecycleConflict{actual: released | destroyed}`) instead of an
//! unknown instance. Tombstones are bounded ([`TOMBSTONES`]); past that the
//! oldest are dropped and their ids become unknown.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use corral_contract::{
    BoxFuture, ConflictState, InstanceId, InstanceState, Rollback, SandboxError, SandboxInstance,
    SandboxProvisionRequest,
};

/// How many ended instances the runtime remembers by id.
pub const TOMBSTONES: usize = 4096;

/// Where an instance stands, as far as the runtime knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstanceStatus {
    /// Provisioned (or resumed) through this runtime and not ended: its
    /// lifecycle state.
    Live(InstanceState),
    /// Ended by an accepted `release` that settled a snapshot.
    Released,
    /// Ended by `destroy`, a ZDR `release`, a compensated allocation, or a
    /// cleanup sweep.
    Destroyed,
    /// Never seen through this runtime (or forgotten past [`TOMBSTONES`]).
    Unknown,
}

/// How a tracked instance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// A durable release settled a snapshot.
    Released,
    /// The instance is gone.
    Destroyed,
}

impl Ended {
    /// The `actual` of the lifecycle conflict a later call meets.
    pub(crate) fn conflict_state(self) -> ConflictState {
        match self {
            Self::Released => ConflictState::Released,
            Self::Destroyed => ConflictState::Destroyed,
        }
    }
}

/// One live instance: the request it answers to and the instance accepted.
#[derive(Debug, Clone)]
pub(crate) struct Tracked {
    /// The request every returned instance is cross-checked against.
    pub(crate) request: SandboxProvisionRequest,
    /// The accepted instance (its `state`, `mounts` and `profile` drive the
    /// gate and the admissions).
    pub(crate) instance: SandboxInstance,
}

/// What a lookup found.
pub(crate) enum Lookup {
    /// A live instance.
    Live(Arc<Tracked>),
    /// An ended instance.
    Ended(Ended),
    /// Nothing.
    Unknown,
}

#[derive(Default)]
struct Table {
    live: HashMap<InstanceId, Arc<Tracked>>,
    ended: HashMap<InstanceId, Ended>,
    order: VecDeque<InstanceId>,
}

impl Table {
    fn end(&mut self, id: &InstanceId, how: Ended) {
        self.live.remove(id);
        if self.ended.insert(id.clone(), how).is_none() {
            self.order.push_back(id.clone());
        }
        while self.order.len() > TOMBSTONES {
            if let Some(oldest) = self.order.pop_front() {
                self.ended.remove(&oldest);
            }
        }
    }
}

/// The shared table of tracked instances (cloned into handed-on rollbacks).
#[derive(Clone, Default)]
pub(crate) struct Instances(Arc<Mutex<Table>>);

impl Instances {
    fn table(&self) -> MutexGuard<'_, Table> {
        // The table holds plain data and every critical section leaves it
        // consistent, so a poisoned lock is still a valid table.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The status of `id`.
    pub(crate) fn status(&self, id: &InstanceId) -> InstanceStatus {
        match self.lookup(id) {
            Lookup::Live(tracked) => InstanceStatus::Live(tracked.instance.state),
            Lookup::Ended(Ended::Released) => InstanceStatus::Released,
            Lookup::Ended(Ended::Destroyed) => InstanceStatus::Destroyed,
            Lookup::Unknown => InstanceStatus::Unknown,
        }
    }

    /// What the runtime knows of `id`.
    pub(crate) fn lookup(&self, id: &InstanceId) -> Lookup {
        let table = self.table();
        if let Some(tracked) = table.live.get(id) {
            return Lookup::Live(tracked.clone());
        }
        match table.ended.get(id) {
            Some(how) => Lookup::Ended(*how),
            None => Lookup::Unknown,
        }
    }

    /// Whether `id` names a live instance.
    pub(crate) fn is_live(&self, id: &InstanceId) -> bool {
        self.table().live.contains_key(id)
    }

    /// Tracks a newly allocated instance (provisioned or resumed).
    pub(crate) fn admit(&self, request: SandboxProvisionRequest, instance: SandboxInstance) {
        let mut table = self.table();
        table.ended.remove(&instance.instance_id);
        table.order.retain(|id| id != &instance.instance_id);
        table.live.insert(
            instance.instance_id.clone(),
            Arc::new(Tracked { request, instance }),
        );
    }

    /// Replaces the accepted instance of a live record (activation). An
    /// instance ended while the call was in flight stays ended.
    pub(crate) fn update(&self, instance: SandboxInstance) {
        if let Some(tracked) = self.table().live.get_mut(&instance.instance_id) {
            *tracked = Arc::new(Tracked {
                request: tracked.request.clone(),
                instance,
            });
        }
    }

    /// Forgets a live record, keeping a tombstone.
    pub(crate) fn end(&self, id: &InstanceId, how: Ended) {
        self.table().end(id, how);
    }

    /// Wraps the rollback of an accepted instance allocation so that, when
    /// the outer caller compensates it, the runtime forgets the instance.
    pub(crate) fn forget_on_rollback(
        &self,
        id: InstanceId,
        rollback: Box<dyn Rollback>,
    ) -> Box<dyn Rollback> {
        Box::new(ForgetOnRollback {
            instances: self.clone(),
            id,
            inner: rollback,
        })
    }
}

/// A handed-on rollback that also ends the runtime's record.
struct ForgetOnRollback {
    instances: Instances,
    id: InstanceId,
    inner: Box<dyn Rollback>,
}

impl Rollback for ForgetOnRollback {
    fn rollback(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async move {
            self.inner.rollback().await?;
            self.instances.end(&self.id, Ended::Destroyed);
            Ok(())
        })
    }
}
