//! [`Runtime`]: holds any provider to the contract.
//!
//! The contract puts validation on the Runner's side of the seam, where it
//! "does not move": every provider, compiled in or behind a wire, is held
//! to the same checks. `Runtime<P>` is that side of the seam, as a wrapper
//! in the style of tower's `Filter`: it implements [`SandboxProvider`]
//! itself, checks every request before calling the provider it wraps and
//! every result after, and callers hold it instead of the raw provider.
//!
//! Before each call: the envelope is the one decoded at construction
//! (`envelope.rs`; teardown is exempt); optional members the envelope lacks
//! are refused typed (`optional.rs`); the lifecycle gate (`lifecycle.rs`)
//! over what the runtime tracked (`tracked.rs`); the mount plan, write
//! scope, read roots and active writes (`admission.rs`); `execute`'s timeout
//! against the profile (`bounds.rs`); retention (`retention.rs`); the
//! network policy (`network.rs`). After each call: the bounds table on
//! results (`bounds.rs`), the identity cross-checks (`identity.rs`), the
//! disposition of a release (`retention.rs`), `openProcess` evidence
//! (`process.rs`); and for the six handoff members, the rollback of a
//! rejected value, at most once and bounded (`handoff.rs`).

mod admission;
mod bounds;
mod envelope;
mod handoff;
mod identity;
mod lifecycle;
mod network;
pub(crate) mod optional;
mod process;
mod retention;
mod tracked;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, CleanupRequest, CleanupResult,
    CloneSnapshotRequest, Compensated, ExecuteRequest, FailureReason, Handoff, InstanceId,
    InstanceState, ListDirRequest, ListDirResult, ListProjectDirRequest, ListProjectDirResult,
    LiveProcess, MaximumBytes, OpenProcessRequest, Operation, ProtocolViolation, ReadFileRequest,
    ReadFileResult, ReadFilesMember, ReadFilesRequest, ReadFilesResult, ReleaseDisposition,
    ReleaseRequest, ResumeRequest, Rollback, SandboxError, SandboxExecutionResult, SandboxInstance,
    SandboxPath, SandboxProvider, SandboxProviderCapabilities, SandboxProvisionRequest, SnapshotId,
    SnapshotRef, SnapshotRequest, WriteFileRequest, bounds::ROLLBACK_BOUND_SECONDS,
};

use handoff::Pending;
pub use network::NetworkShape;
use tracked::{Ended, Instances};
pub use tracked::{InstanceStatus, TOMBSTONES};

/// The validating wrapper callers hold instead of a raw provider.
///
/// ```
/// use std::time::Duration;
///
/// use corral_contract::{SandboxError, SandboxProvider};
/// use corral_runtime::runtime::Runtime;
///
/// /// Callers hold the runtime, never the raw provider.
/// fn hold<P: SandboxProvider>(provider: P) -> Result<Runtime<P>, SandboxError> {
///     Ok(Runtime::new(provider)?.with_rollback_bound(Duration::from_secs(30)))
/// }
/// ```
pub struct Runtime<P> {
    provider: P,
    envelope: SandboxProviderCapabilities,
    instances: Instances,
    network: Mutex<NetworkShape>,
    rollback_bound: Duration,
}

impl<P: SandboxProvider> Runtime<P> {
    /// Wraps `provider`, decoding its envelope again under every cross-field
    /// rule; an envelope that fails is refused as `SandboxProtocolInvalid
    /// {capabilities}` naming the field.
    pub fn new(provider: P) -> Result<Self, SandboxError> {
        let envelope = envelope::redecode(provider.capabilities())?;
        Ok(Self {
            provider,
            envelope,
            instances: Instances::default(),
            network: Mutex::new(NetworkShape::default()),
            rollback_bound: Duration::from_secs(ROLLBACK_BOUND_SECONDS),
        })
    }

    /// The wrapped provider.
    pub fn provider(&self) -> &P {
        &self.provider
    }

    /// Sets the bound on a compensation — a rejected handoff's rollback, and
    /// the destruction of a rejected `openProcess` handle (default 30 s, the
    /// contract's bound for both).
    #[must_use]
    pub fn with_rollback_bound(mut self, bound: Duration) -> Self {
        self.rollback_bound = bound;
        self
    }

    /// The bound on a compensation.
    pub fn rollback_bound(&self) -> Duration {
        self.rollback_bound
    }

    /// Where `instance_id` stands, as far as this runtime knows.
    pub fn instance_status(&self, instance_id: &InstanceId) -> InstanceStatus {
        self.instances.status(instance_id)
    }

    /// The network policy shape currently in force.
    pub fn network_shape(&self) -> NetworkShape {
        self.network
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Changes the network policy shape in force. Live instances are held to
    /// it from their next `activate`, `execute` or `openProcess`.
    pub fn set_network_shape(&self, shape: NetworkShape) {
        *self.network.lock().unwrap_or_else(PoisonError::into_inner) = shape;
    }

    /// Reads one file, with the `allowed_root` the runtime derives from the
    /// instance's own mounts (the deepest mount that owns `path`, or the
    /// output tree).
    pub async fn read_path(
        &self,
        instance_id: InstanceId,
        path: SandboxPath,
        maximum_bytes: MaximumBytes,
    ) -> Result<ReadFileResult, SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::ReadFile, &instance_id)?;
        let root = admission::derive_root(Operation::ReadFile, &tracked, &path)?;
        let request =
            ReadFileRequest::new(instance_id, path, root, maximum_bytes).map_err(|_| {
                SandboxError::operation_failed(Operation::ReadFile, FailureReason::OutsideRoot)
            })?;
        self.read_file(request).await
    }

    /// Reads a batch of files spanning any of the instance's roots: each
    /// member's `allowed_root` is derived from the instance's mounts, the
    /// batch is grouped by root, and each group is one provider call with its
    /// own exact budget (native `readFiles`, or sequential `readFile` when
    /// the envelope lacks it). Outcomes come back in the caller's order.
    pub async fn read_paths(
        &self,
        instance_id: InstanceId,
        files: Vec<ReadFilesMember>,
    ) -> Result<ReadFilesResult, SandboxError> {
        self.unchanged()?;
        optional::contained_read(&self.envelope)?;
        let tracked = lifecycle::gate(&self.instances, Operation::ReadFiles, &instance_id)?;
        let count = files.len();
        let mut batch = Vec::with_capacity(count);
        for (index, member) in files.into_iter().enumerate() {
            let root = admission::derive_root(Operation::ReadFiles, &tracked, &member.path)?;
            batch.push(optional::Rooted {
                index,
                root,
                member,
            });
        }
        let mut slots = vec![None; count];
        for chunk in optional::chunks(batch) {
            let (request, indexes) = chunk.into_request(&instance_id)?;
            let result = optional::read_group(&self.provider, &self.envelope, &request).await?;
            for (index, outcome) in indexes.into_iter().zip(result.files) {
                slots[index] = Some(outcome);
            }
        }
        // Every group's result was held to one outcome per member, so every
        // slot is filled; a gap would be a short batch.
        let files = slots
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ProtocolViolation::new("files", format!("{count} outcomes"), "fewer")
                    .into_error(Operation::ReadFiles)
            })?;
        Ok(ReadFilesResult { files })
    }

    fn unchanged(&self) -> Result<(), SandboxError> {
        envelope::unchanged(&self.envelope, self.provider.capabilities())
    }

    /// Accepts a held handoff when `verdict` is `Ok`, rejects it (rollback
    /// once, bounded) otherwise.
    async fn settle(
        &self,
        pending: Pending,
        verdict: Result<(), SandboxError>,
    ) -> Result<Box<dyn Rollback>, SandboxError> {
        match verdict {
            Ok(()) => Ok(pending.accept()),
            Err(cause) => Err(pending.reject(cause).await),
        }
    }

    /// Accepts a new instance allocation (`provision`, `resume`).
    async fn allocated(
        &self,
        operation: Compensated,
        request: SandboxProvisionRequest,
        handoff: Handoff<SandboxInstance>,
        state: InstanceState,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        let (instance, pending) = Pending::hold(handoff, operation, self.rollback_bound);
        let verdict =
            identity::instance(&request, &instance, &self.envelope, state).and_then(|()| {
                identity::fresh_instance(operation.member(), &self.instances, &instance)
            });
        let rollback = self.settle(pending, verdict).await?;
        self.instances.admit(request, instance.clone());
        let rollback = self
            .instances
            .forget_on_rollback(instance.instance_id.clone(), rollback);
        Ok(Handoff {
            value: instance,
            rollback,
        })
    }
}

impl<P: SandboxProvider> SandboxProvider for Runtime<P> {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        &self.envelope
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.unchanged()?;
        admission::allocation(&request, &self.envelope, &self.network_shape())?;
        let handoff = self.provider.provision(request.clone()).await?;
        self.allocated(
            Compensated::Provision,
            request,
            handoff,
            InstanceState::Provisioning,
        )
        .await
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::WriteFile, &request.instance_id)?;
        admission::write(&tracked, &request.path)?;
        self.provider.write_file(request).await
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        self.unchanged()?;
        optional::declared(Operation::BeginActiveWrite, &self.envelope)?;
        let tracked = lifecycle::gate(
            &self.instances,
            Operation::BeginActiveWrite,
            &request.instance_id,
        )?;
        admission::active_write(&tracked, &request.batch)?;
        self.provider.begin_active_write(request).await
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::Activate, &instance_id)?;
        let profile = &tracked.instance.profile;
        network::check(&profile.network, &self.network_shape(), &self.envelope)?;
        let handoff = self.provider.activate(instance_id.clone()).await?;
        let (instance, pending) =
            Pending::hold(handoff, Compensated::Activate, self.rollback_bound);
        let verdict = identity::same_instance(Operation::Activate, &instance_id, &instance)
            .and_then(|()| {
                identity::instance(
                    &tracked.request,
                    &instance,
                    &self.envelope,
                    InstanceState::Active,
                )
            });
        let rollback = self.settle(pending, verdict).await?;
        self.instances.update(instance.clone());
        let rollback = self.instances.forget_on_rollback(instance_id, rollback);
        Ok(Handoff {
            value: instance,
            rollback,
        })
    }

    async fn execute(
        &self,
        mut request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::Execute, &request.instance_id)?;
        let profile = &tracked.instance.profile;
        network::check(&profile.network, &self.network_shape(), &self.envelope)?;
        bounds::command(&request.command, profile)?;
        // The result check needs the command's limits, not its stdin.
        let stdin = request.command.stdin.take();
        let command = request.command.clone();
        request.command.stdin = stdin;
        let result = self.provider.execute(request).await?;
        bounds::execution(&command, &result)?;
        Ok(result)
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        self.unchanged()?;
        optional::contained_read(&self.envelope)?;
        let tracked = lifecycle::gate(&self.instances, Operation::ReadFile, request.instance_id())?;
        admission::root(Operation::ReadFile, &tracked, request.allowed_root())?;
        let result = self.provider.read_file(request.clone()).await?;
        bounds::read_file(&request, &result)?;
        Ok(result)
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        self.unchanged()?;
        optional::contained_read(&self.envelope)?;
        let tracked =
            lifecycle::gate(&self.instances, Operation::ReadFiles, request.instance_id())?;
        admission::root(Operation::ReadFiles, &tracked, request.allowed_root())?;
        optional::read_group(&self.provider, &self.envelope, &request).await
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        self.unchanged()?;
        optional::declared(Operation::ListDir, &self.envelope)?;
        let tracked = lifecycle::gate(&self.instances, Operation::ListDir, &request.instance_id)?;
        admission::root(Operation::ListDir, &tracked, &request.root)?;
        let result = self.provider.list_dir(request.clone()).await?;
        bounds::list_dir(&request, &result)?;
        Ok(result)
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        self.unchanged()?;
        optional::declared(Operation::ListProjectDir, &self.envelope)?;
        let tracked = lifecycle::gate(
            &self.instances,
            Operation::ListProjectDir,
            &request.instance_id,
        )?;
        admission::root(Operation::ListProjectDir, &tracked, &request.root)?;
        let result = self.provider.list_project_dir(request.clone()).await?;
        bounds::list_project_dir(&request, &result)?;
        Ok(result)
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::Snapshot, &request.instance_id)?;
        retention::snapshot(&tracked, &self.envelope)?;
        let handoff = self.provider.snapshot(request.clone()).await?;
        let (snapshot, pending) =
            Pending::hold(handoff, Compensated::Snapshot, self.rollback_bound);
        let verdict = identity::snapshot(&request, &tracked.instance, &snapshot);
        let rollback = self.settle(pending, verdict).await?;
        Ok(Handoff {
            value: snapshot,
            rollback,
        })
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.unchanged()?;
        retention::clone(&self.envelope)?;
        let handoff = self.provider.clone_snapshot(request.clone()).await?;
        let (clone, pending) =
            Pending::hold(handoff, Compensated::CloneSnapshot, self.rollback_bound);
        let verdict = identity::clone(&request, &clone);
        let rollback = self.settle(pending, verdict).await?;
        Ok(Handoff {
            value: clone,
            rollback,
        })
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.unchanged()?;
        let tracked = lifecycle::gate(&self.instances, Operation::Release, &request.instance_id)?;
        let settles = retention::release_request(&tracked, &request)?;
        let instance_id = request.instance_id.clone();
        let handoff = self.provider.release(request).await?;
        let (disposition, pending) =
            Pending::hold(handoff, Compensated::Release, self.rollback_bound);
        match retention::release_result(&tracked, settles.as_ref(), &disposition) {
            Ok(ended) => {
                let rollback = pending.accept();
                self.instances.end(&instance_id, ended);
                Ok(Handoff {
                    value: disposition,
                    rollback,
                })
            }
            Err(cause) => Err(pending.reject(cause).await),
        }
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.unchanged()?;
        retention::resume(&self.envelope)?;
        identity::resume_admission(&request)?;
        admission::allocation(&request.request, &self.envelope, &self.network_shape())?;
        let handoff = self.provider.resume(request.clone()).await?;
        self.allocated(
            Compensated::Resume,
            request.request,
            handoff,
            InstanceState::Active,
        )
        .await
    }

    /// Destroy accepts any state and is idempotent: it reaches the provider
    /// for any id, tracked or not, and ends the runtime's record on success.
    /// Teardown (`destroy`, `destroySnapshot`, `cleanup`) is never refused
    /// for a changed envelope: it claims nothing, and refusing it would
    /// strand the allocation.
    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        self.provider.destroy(instance_id.clone()).await?;
        self.instances.end(&instance_id, Ended::Destroyed);
        Ok(())
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        self.provider.destroy_snapshot(snapshot_id).await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        let result = self.provider.cleanup(request).await?;
        for instance_id in &result.instances {
            self.instances.end(instance_id, Ended::Destroyed);
        }
        Ok(result)
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        self.unchanged()?;
        optional::declared(Operation::OpenProcess, &self.envelope)?;
        let tracked = lifecycle::gate(
            &self.instances,
            Operation::OpenProcess,
            &request.instance_id,
        )?;
        let profile = &tracked.instance.profile;
        network::check(&profile.network, &self.network_shape(), &self.envelope)?;
        let opened = self.provider.open_process(request.clone()).await?;
        let process = process::accept(
            opened,
            &request.process,
            &tracked.instance,
            &self.envelope,
            self.rollback_bound,
        )
        .await?;
        Ok(Box::new(process))
    }
}
