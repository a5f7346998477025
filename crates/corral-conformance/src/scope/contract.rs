//! The contract suite's scope: a runtime over a fresh provider of the
//! target, and the contract calls a case makes, each failing with the step
//! it was.
//!
//! Every allocation a case receives (instances from `provision` and
//! `resume`, snapshots from `snapshot`, `cloneSnapshot` and a durable
//! `release`) is owned by the scope, and `Scope::finish` destroys what is
//! left — instances first, since one may run on a snapshot the case also
//! owns.

use corral_contract::{
    CleanupRequest, CleanupResult, CloneSnapshotRequest, ConflictState, ConformanceCase,
    FileContent, FileMode, InstanceId, InstanceState, ReleaseDisposition, ReleaseRequest,
    ResumeRequest, SandboxError, SandboxInstance, SandboxPath, SandboxProvider,
    SandboxProviderCapabilities, SandboxProvisionRequest, SessionId, SnapshotId, SnapshotRef,
    SnapshotRequest, Timestamp, WriteFileRequest,
};
use corral_runtime::runtime::Runtime;

use crate::failure::{Failure, ensure};
use crate::request::{self, Context, Plan};
use crate::scope::{Scope, Subject};
use crate::target::{ConformanceTarget, EgressFixture, Inventory};

/// A contract case's scope.
pub(crate) type ContractScope<'t, T> = Scope<RuntimeSubject<'t, T>>;

/// What a contract case works on: a runtime over a fresh provider of the
/// target.
pub(crate) struct RuntimeSubject<'t, T: ConformanceTarget> {
    target: &'t T,
    runtime: Option<Runtime<T::Provider>>,
    envelope: SandboxProviderCapabilities,
    sequence: u32,
}

/// An allocation a contract case owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Allocation {
    /// An instance, destroyed with `destroy`.
    Instance(InstanceId),
    /// A snapshot, destroyed with `destroySnapshot`.
    Snapshot(SnapshotId),
}

fn build<T: ConformanceTarget>(target: &T) -> Result<Runtime<T::Provider>, Failure> {
    let provider = target
        .provider()
        .map_err(|e| Failure::step("building the provider", e))?;
    Runtime::new(provider).map_err(|e| Failure::step("building the runtime", e))
}

impl<T: ConformanceTarget> RuntimeSubject<'_, T> {
    /// The runtime every call goes through.
    fn rt(&self) -> Result<&Runtime<T::Provider>, Failure> {
        self.runtime
            .as_ref()
            .ok_or_else(|| Failure::new("no runtime: restarting it failed"))
    }

    /// Drops the runtime (and its provider), then builds a fresh one.
    fn restart(&mut self) -> Result<(), Failure> {
        self.runtime = None;
        self.runtime = Some(build(self.target)?);
        Ok(())
    }
}

impl<T: ConformanceTarget> Subject for RuntimeSubject<'_, T> {
    type Case = ConformanceCase;
    type Allocation = Allocation;

    /// A runtime whose restart failed is built again.
    fn ready(&mut self) -> Result<(), Failure> {
        if self.runtime.is_none() {
            self.restart()?;
        }
        Ok(())
    }

    /// An allocation that is already gone (`SandboxInstanceNotFound`,
    /// `SandboxSnapshotNotFound`, an instance already released or
    /// destroyed) is settled.
    async fn give_back(&self, allocation: &Allocation) -> Result<(), Failure> {
        let runtime = self.rt()?;
        let result = match allocation {
            Allocation::Instance(id) => runtime
                .destroy(id.clone())
                .await
                .map_err(|e| (format!("cleanup: destroy {id}"), e)),
            Allocation::Snapshot(id) => runtime
                .destroy_snapshot(id.clone())
                .await
                .map_err(|e| (format!("cleanup: destroySnapshot {id}"), e)),
        };
        match result {
            Err((step, e)) if !already_gone(&e) => Err(Failure::step(step, e)),
            Ok(()) | Err(_) => Ok(()),
        }
    }
}

impl<'t, T: ConformanceTarget> ContractScope<'t, T> {
    /// A scope with a runtime over a fresh provider of `target`.
    pub(crate) fn new(target: &'t T, case: ConformanceCase) -> Result<Self, Failure> {
        let runtime = build(target)?;
        let envelope = runtime.capabilities().clone();
        let subject = RuntimeSubject {
            target,
            runtime: Some(runtime),
            envelope,
            sequence: 0,
        };
        Ok(Scope::on(subject, case))
    }

    /// The runtime every call goes through.
    pub(crate) fn rt(&self) -> Result<&Runtime<T::Provider>, Failure> {
        self.subject.rt()
    }

    /// Owns `id`, to be destroyed before every snapshot.
    fn own_instance(&mut self, id: InstanceId) {
        let at = self
            .owned
            .iter()
            .position(|a| matches!(a, Allocation::Snapshot(_)))
            .unwrap_or(self.owned.len());
        self.owned.insert(at, Allocation::Instance(id));
    }

    /// Owns `id`.
    fn own_snapshot(&mut self, id: SnapshotId) {
        self.owned.push(Allocation::Snapshot(id));
    }

    /// The envelope the runtime advertises.
    pub(crate) fn envelope(&self) -> &SandboxProviderCapabilities {
        &self.subject.envelope
    }

    /// The target's egress fixture for the `network-none` case.
    pub(crate) fn egress(&self) -> Option<EgressFixture> {
        self.subject.target.egress()
    }

    /// The target's egress fixture for the allowlist case.
    pub(crate) fn allowlist_egress(&self) -> Option<EgressFixture> {
        self.subject.target.allowlist_egress()
    }

    /// Drops the runtime (and its provider), then builds a fresh one over the
    /// same backend state: "a runtime restarted from nothing".
    pub(crate) fn restart(&mut self) -> Result<(), Failure> {
        self.subject.restart()
    }

    /// The backend's inventory, when the target can observe it.
    pub(crate) async fn inventory(&self) -> Result<Option<Inventory>, Failure> {
        match self.subject.target.inventory().await {
            None => Ok(None),
            Some(Ok(inventory)) => Ok(Some(inventory)),
            Some(Err(e)) => Err(Failure::step("reading the backend's inventory", e)),
        }
    }

    /// A provision request for `plan`.
    pub(crate) fn request(&mut self, plan: Plan) -> Result<SandboxProvisionRequest, Failure> {
        self.subject.sequence += 1;
        let egress = self.subject.target.allowlist_egress();
        let cx = Context {
            provider: &self.subject.target.name(),
            case: self.case,
            envelope: &self.subject.envelope,
            root_image: self.subject.target.root_image(),
            default_network: request::default_network(&self.subject.envelope, egress.as_ref())?,
            sequence: self.subject.sequence,
        };
        request::provision_request(cx, plan)
    }

    /// A Session id no other request of this case uses.
    pub(crate) fn new_session(&mut self) -> Result<SessionId, Failure> {
        self.subject.sequence += 1;
        SessionId::new(format!("{}-session-{}", self.case, self.subject.sequence))
            .map_err(request::internal)
    }

    /// `provision`, taking ownership of the instance; it must come back
    /// `provisioning`.
    pub(crate) async fn provision(
        &mut self,
        request: SandboxProvisionRequest,
    ) -> Result<SandboxInstance, Failure> {
        let handoff = self
            .rt()?
            .provision(request)
            .await
            .map_err(|e| Failure::step("provision", e))?;
        let (instance, _owned) = handoff.into_parts();
        self.own_instance(instance.instance_id.clone());
        ensure(instance.state == InstanceState::Provisioning, || {
            format!("provision: state {}, expected provisioning", instance.state)
        })?;
        Ok(instance)
    }

    /// `activate`; the instance must come back `active` under the same id.
    pub(crate) async fn activate(&self, id: &InstanceId) -> Result<SandboxInstance, Failure> {
        let (instance, _owned) = self
            .rt()?
            .activate(id.clone())
            .await
            .map_err(|e| Failure::step(format_args!("activate {id}"), e))?
            .into_parts();
        ensure(
            instance.state == InstanceState::Active && instance.instance_id == *id,
            || {
                format!(
                    "activate {id}: returned {} in state {}, expected {id} active",
                    instance.instance_id, instance.state
                )
            },
        )?;
        Ok(instance)
    }

    /// `provision` then `activate`.
    pub(crate) async fn active(&mut self, plan: Plan) -> Result<SandboxInstance, Failure> {
        let request = self.request(plan)?;
        let instance = self.provision(request).await?;
        self.activate(&instance.instance_id).await
    }

    /// `writeFile`, returning the contract's answer as is.
    pub(crate) async fn try_write(
        &self,
        id: &InstanceId,
        path: &SandboxPath,
        bytes: &[u8],
    ) -> Result<Result<(), SandboxError>, Failure> {
        let request = WriteFileRequest {
            instance_id: id.clone(),
            path: path.clone(),
            content: FileContent::new(bytes.to_vec()).map_err(request::internal)?,
            mode: FileMode::default(),
        };
        Ok(self.rt()?.write_file(request).await)
    }

    /// `writeFile`, which must succeed.
    pub(crate) async fn write(
        &self,
        id: &InstanceId,
        path: &SandboxPath,
        bytes: &[u8],
    ) -> Result<(), Failure> {
        self.try_write(id, path, bytes)
            .await?
            .map_err(|e| Failure::step(format_args!("writeFile {path}"), e))
    }

    /// `snapshot` under `expires_at`, returning the contract's answer as is;
    /// a snapshot is recorded for cleanup.
    pub(crate) async fn try_snapshot(
        &mut self,
        id: &InstanceId,
        expires_at: Timestamp,
    ) -> Result<Result<SnapshotRef, SandboxError>, Failure> {
        let request = SnapshotRequest {
            instance_id: id.clone(),
            expires_at,
        };
        match self.rt()?.snapshot(request).await {
            Ok(handoff) => {
                let (snapshot, _owned) = handoff.into_parts();
                self.own_snapshot(snapshot.snapshot_id.clone());
                Ok(Ok(snapshot))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// `snapshot` under `expires_at`, which must succeed and carry exactly
    /// that deadline.
    pub(crate) async fn snapshot(
        &mut self,
        id: &InstanceId,
        expires_at: Timestamp,
    ) -> Result<SnapshotRef, Failure> {
        let snapshot = self
            .try_snapshot(id, expires_at)
            .await?
            .map_err(|e| Failure::step(format_args!("snapshot {id}"), e))?;
        ensure(snapshot.expires_at == expires_at, || {
            format!(
                "snapshot {id}: expires_at {}, requested {expires_at}",
                snapshot.expires_at
            )
        })?;
        Ok(snapshot)
    }

    /// `cloneSnapshot` into `target_session`, recorded for cleanup.
    pub(crate) async fn clone_snapshot(
        &mut self,
        source: &SnapshotRef,
        target_session: &SessionId,
    ) -> Result<SnapshotRef, Failure> {
        let request = CloneSnapshotRequest {
            source: source.clone(),
            target_session_id: target_session.clone(),
        };
        let (clone, _owned) = self
            .rt()?
            .clone_snapshot(request)
            .await
            .map_err(|e| Failure::step(format_args!("cloneSnapshot {}", source.snapshot_id), e))?
            .into_parts();
        self.own_snapshot(clone.snapshot_id.clone());
        Ok(clone)
    }

    /// `release`; a settled snapshot is recorded for cleanup.
    pub(crate) async fn release(
        &mut self,
        id: &InstanceId,
        snapshot_expires_at: Option<Timestamp>,
    ) -> Result<ReleaseDisposition, Failure> {
        let request = ReleaseRequest {
            instance_id: id.clone(),
            snapshot_expires_at,
        };
        let (disposition, _owned) = self
            .rt()?
            .release(request)
            .await
            .map_err(|e| Failure::step(format_args!("release {id}"), e))?
            .into_parts();
        if let ReleaseDisposition::Released { snapshot } = &disposition {
            self.own_snapshot(snapshot.snapshot_id.clone());
        }
        Ok(disposition)
    }

    /// `resume`, returning the contract's answer as is; a resumed instance is
    /// recorded for cleanup.
    pub(crate) async fn try_resume(
        &mut self,
        request: SandboxProvisionRequest,
        snapshot: &SnapshotRef,
    ) -> Result<Result<SandboxInstance, SandboxError>, Failure> {
        let resume = ResumeRequest {
            request,
            snapshot: snapshot.clone(),
        };
        match self.rt()?.resume(resume).await {
            Ok(handoff) => {
                let (instance, _owned) = handoff.into_parts();
                self.own_instance(instance.instance_id.clone());
                Ok(Ok(instance))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// `resume`, which must produce an `active` instance.
    pub(crate) async fn resume(
        &mut self,
        request: SandboxProvisionRequest,
        snapshot: &SnapshotRef,
    ) -> Result<SandboxInstance, Failure> {
        let id = snapshot.snapshot_id.clone();
        let instance = self
            .try_resume(request, snapshot)
            .await?
            .map_err(|e| Failure::step(format_args!("resume from {id}"), e))?;
        ensure(instance.state == InstanceState::Active, || {
            format!(
                "resume from {id}: state {}, expected active",
                instance.state
            )
        })?;
        Ok(instance)
    }

    /// `destroy`, which must succeed.
    pub(crate) async fn destroy(&mut self, id: &InstanceId) -> Result<(), Failure> {
        self.rt()?
            .destroy(id.clone())
            .await
            .map_err(|e| Failure::step(format_args!("destroy {id}"), e))?;
        self.owned
            .retain(|a| *a != Allocation::Instance(id.clone()));
        Ok(())
    }

    /// `destroySnapshot`, which must succeed.
    pub(crate) async fn destroy_snapshot(&mut self, id: &SnapshotId) -> Result<(), Failure> {
        self.rt()?
            .destroy_snapshot(id.clone())
            .await
            .map_err(|e| Failure::step(format_args!("destroySnapshot {id}"), e))?;
        self.owned
            .retain(|a| *a != Allocation::Snapshot(id.clone()));
        Ok(())
    }

    /// `cleanup`.
    pub(crate) async fn cleanup(
        &self,
        now: Timestamp,
        orphaned_before: Timestamp,
        pinned: Vec<SnapshotId>,
    ) -> Result<CleanupResult, Failure> {
        let request =
            CleanupRequest::new(now, orphaned_before, pinned).map_err(request::internal)?;
        self.rt()?
            .cleanup(request)
            .await
            .map_err(|e| Failure::step(format_args!("cleanup before {orphaned_before}"), e))
    }

    /// Forgets allocations the case proved gone (released ZDR instances,
    /// swept ones), so cleanup does not address them again.
    pub(crate) fn forget(&mut self, instances: &[InstanceId], snapshots: &[SnapshotId]) {
        self.owned.retain(|a| match a {
            Allocation::Instance(id) => !instances.contains(id),
            Allocation::Snapshot(id) => !snapshots.contains(id),
        });
    }
}

/// Whether a teardown refusal means the allocation no longer exists.
pub(crate) fn already_gone(e: &SandboxError) -> bool {
    match e {
        SandboxError::SandboxInstanceNotFound { .. }
        | SandboxError::SandboxSnapshotNotFound { .. } => true,
        SandboxError::SandboxLifecycleConflict { actual, .. } => {
            matches!(actual, ConflictState::Released | ConflictState::Destroyed)
        }
        _ => false,
    }
}
