//! A case's working context: its runtime, the allocations it owns, and the
//! contract calls it makes, each failing with the step it was.
//!
//! Every allocation a case receives (instances from `provision` and
//! `resume`, snapshots from `snapshot`, `cloneSnapshot` and a durable
//! `release`) is recorded, and [`Scope::finish`] destroys what is left —
//! also after a failed or timed-out case.

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
use crate::target::{ConformanceTarget, EgressFixture, Inventory};

/// One case's context.
pub(crate) struct Scope<'t, T: ConformanceTarget> {
    target: &'t T,
    runtime: Option<Runtime<T::Provider>>,
    envelope: SandboxProviderCapabilities,
    case: ConformanceCase,
    sequence: u32,
    instances: Vec<InstanceId>,
    snapshots: Vec<SnapshotId>,
}

fn build<T: ConformanceTarget>(target: &T) -> Result<Runtime<T::Provider>, Failure> {
    let provider = target
        .provider()
        .map_err(|e| Failure::step("building the provider", e))?;
    Runtime::new(provider).map_err(|e| Failure::step("building the runtime", e))
}

impl<'t, T: ConformanceTarget> Scope<'t, T> {
    /// A scope with a runtime over a fresh provider of `target`.
    pub(crate) fn new(target: &'t T, case: ConformanceCase) -> Result<Self, Failure> {
        let runtime = build(target)?;
        let envelope = runtime.capabilities().clone();
        Ok(Self {
            target,
            runtime: Some(runtime),
            envelope,
            case,
            sequence: 0,
            instances: Vec::new(),
            snapshots: Vec::new(),
        })
    }

    /// The runtime every call goes through.
    pub(crate) fn rt(&self) -> Result<&Runtime<T::Provider>, Failure> {
        self.runtime
            .as_ref()
            .ok_or_else(|| Failure::new("no runtime: restarting it failed"))
    }

    /// The envelope the runtime advertises.
    pub(crate) fn envelope(&self) -> &SandboxProviderCapabilities {
        &self.envelope
    }

    /// The target's egress fixture.
    pub(crate) fn egress(&self) -> Option<EgressFixture> {
        self.target.egress()
    }

    /// Drops the runtime (and its provider), then builds a fresh one over the
    /// same backend state: "a runtime restarted from nothing".
    pub(crate) fn restart(&mut self) -> Result<(), Failure> {
        self.runtime = None;
        self.runtime = Some(build(self.target)?);
        Ok(())
    }

    /// The backend's inventory, when the target can observe it.
    pub(crate) async fn inventory(&self) -> Result<Option<Inventory>, Failure> {
        match self.target.inventory().await {
            None => Ok(None),
            Some(Ok(inventory)) => Ok(Some(inventory)),
            Some(Err(e)) => Err(Failure::step("reading the backend's inventory", e)),
        }
    }

    /// A provision request for `plan`.
    pub(crate) fn request(&mut self, plan: Plan) -> Result<SandboxProvisionRequest, Failure> {
        self.sequence += 1;
        let egress = self.target.egress();
        let cx = Context {
            provider: &self.target.name(),
            case: self.case,
            envelope: &self.envelope,
            root_image: self.target.root_image(),
            default_network: request::default_network(&self.envelope, egress.as_ref())?,
            sequence: self.sequence,
        };
        request::provision_request(cx, plan)
    }

    /// A Session id no other request of this case uses.
    pub(crate) fn new_session(&mut self) -> Result<SessionId, Failure> {
        self.sequence += 1;
        SessionId::new(format!("{}-session-{}", self.case, self.sequence))
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
        self.instances.push(instance.instance_id.clone());
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
                self.snapshots.push(snapshot.snapshot_id.clone());
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
        self.snapshots.push(clone.snapshot_id.clone());
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
            self.snapshots.push(snapshot.snapshot_id.clone());
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
                self.instances.push(instance.instance_id.clone());
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
        self.instances.retain(|i| i != id);
        Ok(())
    }

    /// `destroySnapshot`, which must succeed.
    pub(crate) async fn destroy_snapshot(&mut self, id: &SnapshotId) -> Result<(), Failure> {
        self.rt()?
            .destroy_snapshot(id.clone())
            .await
            .map_err(|e| Failure::step(format_args!("destroySnapshot {id}"), e))?;
        self.snapshots.retain(|s| s != id);
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
        self.instances.retain(|i| !instances.contains(i));
        self.snapshots.retain(|s| !snapshots.contains(s));
    }

    /// Destroys every recorded instance and snapshot. An allocation that is
    /// already gone (`SandboxInstanceNotFound`, `SandboxSnapshotNotFound`, an
    /// instance already released or destroyed) is settled; any other refusal
    /// fails the case, naming the first one.
    pub(crate) async fn finish(mut self) -> Result<(), Failure> {
        if self.runtime.is_none() {
            self.restart()?;
        }
        let runtime = self.rt()?;
        let mut first: Option<Failure> = None;
        for id in &self.instances {
            if let Err(e) = runtime.destroy(id.clone()).await
                && !already_gone(&e)
                && first.is_none()
            {
                first = Some(Failure::step(format_args!("cleanup: destroy {id}"), e));
            }
        }
        for id in &self.snapshots {
            if let Err(e) = runtime.destroy_snapshot(id.clone()).await
                && !already_gone(&e)
                && first.is_none()
            {
                first = Some(Failure::step(
                    format_args!("cleanup: destroySnapshot {id}"),
                    e,
                ));
            }
        }
        first.map_or(Ok(()), Err)
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
