//! `ContractAdapter<B>`: the contract's eighteen members, written once for
//! any [`Backend`].
//!
//! ```
//! use std::sync::Arc;
//! use corral_backend::Backend;
//! use corral_contract::{SandboxError, SandboxProviderCapabilities};
//! use corral_runtime::adapter::ContractAdapter;
//!
//! /// Any backend, behind the envelope its registry entry declares
//! /// (the in-tree ones are in `corral_registry::envelopes`).
//! fn adapt<B: Backend + 'static>(
//!     backend: B,
//!     envelope: SandboxProviderCapabilities,
//! ) -> Result<ContractAdapter<B>, SandboxError> {
//!     ContractAdapter::new(Arc::new(backend), envelope)
//! }
//! ```
//!
//! # What the adapter guarantees
//!
//! - **An honest envelope.** [`ContractAdapter::new`] refuses an envelope
//!   that claims a member or an enforcement the backend does not declare
//!   (its documentation has the table; the in-tree envelopes are in
//!   `corral_registry::envelopes`). Optional members the envelope lacks give the
//!   contract's typed refusal, never the backend's.
//! - **Nothing only the adapter knows.** Every instance and snapshot is
//!   found again from the backend alone — labels, keys and the instance
//!   record in the control root (see [`record`]) — so a new adapter over the
//!   same backend (a restarted runtime) can address, clean up and recover
//!   everything. The only in-memory state is the live-process reservation
//!   of each instance and the set of active-write transactions this adapter
//!   is publishing right now; neither is needed for cleanup.
//! - **Identity echoed exactly.** Every instance is
//!   [`SandboxInstance::for_request`] of its recorded request; every
//!   snapshot is `SnapshotRef::for_instance` of its source (a clone,
//!   `SnapshotRef::cloned`), and a ref passed back in is checked against the
//!   labels the backend stored. `expires_at` is never replaced by a platform
//!   deadline; `image_digest` is derived from `root_image`.
//! - **Handoffs own their allocation.** The six handoff members return a
//!   rollback that captured the backend id of what they allocated; until the
//!   handoff returns, a failure (or the future being dropped) undoes the
//!   partial allocation.
//! - **Closed errors.** Every backend failure is mapped by a total table
//!   (`errors`); the adapter authors only the eight adapter errors.
//!
//! # Where the contract is silent
//!
//! Each member's file documents its own decisions: the write scope the
//! record enforces, the sealing of read-only mounts (recorded, refused
//! through the trusted port, not enforced against the workload), execute's
//! bounded capture, readFile's reason table, listDir's counting, release's
//! snapshot deadline, cleanup's reading of labels, openProcess's stream
//! wrappers and reservation, and the active-write journal.

mod activate;
mod active_write;
mod cleanup;
mod clock;
mod clone_snapshot;
mod destroy;
mod destroy_snapshot;
mod errors;
mod execute;
mod list_dir;
mod list_project_dir;
mod open_process;
mod overclaim;
mod provision;
mod read_file;
mod read_files;
pub mod record;
mod release;
mod resume;
mod rollback;
mod snapshot;
mod streams;
mod write_file;

use std::fmt;
use std::sync::Arc;

use corral_backend::{Backend, Verified};
use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, CleanupRequest, CleanupResult,
    CloneSnapshotRequest, ExecuteRequest, FailureReason, Handoff, InstanceId, ListDirRequest,
    ListDirResult, ListProjectDirRequest, ListProjectDirResult, LiveProcess, OpenProcessRequest,
    Operation, ReadFileRequest, ReadFileResult, ReadFilesRequest, ReadFilesResult,
    ReleaseDisposition, ReleaseRequest, ResumeRequest, SandboxError, SandboxExecutionResult,
    SandboxInstance, SandboxProvider, SandboxProviderCapabilities, SandboxProvisionRequest,
    SnapshotId, SnapshotRef, SnapshotRequest, WriteFileRequest,
};

pub use active_write::RecoveryReport;

use active_write::InFlight;

/// The sandbox path of one of the adapter's own files (its record, its
/// journal), built from its constants and validated ids: refused like any
/// path, never assumed.
fn at(path: &str) -> corral_backend::Result<corral_backend::SandboxPath> {
    corral_backend::sandbox_path("path", path)
}
use open_process::Reservations;

/// The contract implemented over one backend, under one envelope.
///
/// Cheap to share behind an `Arc`; every member takes `&self`.
pub struct ContractAdapter<B: Backend> {
    backend: Arc<B>,
    envelope: SandboxProviderCapabilities,
    processes: Arc<Reservations>,
    in_flight: Arc<InFlight>,
}

impl<B: Backend> ContractAdapter<B> {
    /// An adapter presenting `backend` under `envelope`.
    ///
    /// Refuses a backend that declares an optional member it does not
    /// implement (`SandboxOperationFailed{capabilities, platform_rejected}`),
    /// and an envelope that overclaims the backend
    /// (`SandboxCapabilityUnavailable{requirement, capability}` naming the
    /// first overclaimed field in `capability`, and in `requirement` the
    /// closed requirement selection would speak for it). Checked in this
    /// order:
    ///
    /// | envelope claim | needs |
    /// |---|---|
    /// | `snapshots` | `snapshot` |
    /// | `snapshot_clone` | `snapshot_clone` |
    /// | `physically_contained_file_read`, `read_files` | `contained_read` |
    /// | `list_dir`, `list_project_dir` | `list_tree` |
    /// | `active_mount_write` | `write_batch` |
    /// | `open_process` | `start_process` |
    /// | any `package_managers` | never: no backend primitive installs packages, so the adapter materializes none |
    /// | `none` in `network_modes` | `enforces.network_none` |
    /// | `egress_certification` above `unsupported` | `enforces.network_allowlist` |
    /// | `enforcement.network_egress: provider_enforced` | every listed mode enforced (an uncertified allowlist is not) |
    /// | `enforcement.memory_limit` / `cpu_limit` / `process_count_limit: provider_enforced` | `enforces.memory` / `cpu` / `pids` |
    /// | `enforcement.read_only_mounts: provider_enforced` | never: there is no backend primitive that seals a mount against the workload; the adapter refuses writes through the trusted port only |
    /// | `enforcement.wall_clock_timeout: provider_enforced` | never: command timeouts are the backend's, but an instance's `expires_at` is enforced by `cleanup` and the Runner (the adapter deliberately does not hand it to the backend, so that `cleanup` reports every expired instance it reclaims) |
    ///
    /// A backend already verified (a registry opens its backends so) goes
    /// through [`ContractAdapter::from_verified`] instead, which does not
    /// check it again.
    pub fn new(
        backend: Arc<B>,
        envelope: SandboxProviderCapabilities,
    ) -> Result<Self, SandboxError> {
        let backend = Verified::new_shared(backend).map_err(|_| {
            errors::failed(Operation::Capabilities, FailureReason::PlatformRejected)
        })?;
        Self::from_verified(backend, envelope)
    }

    /// An adapter presenting `backend`, which [`corral_backend::verify`]
    /// has accepted already, under `envelope`: [`ContractAdapter::new`]
    /// without running the check again. Refuses an envelope that
    /// overclaims the backend the same way.
    pub fn from_verified(
        backend: Verified<Arc<B>>,
        envelope: SandboxProviderCapabilities,
    ) -> Result<Self, SandboxError> {
        let backend = backend.into_inner();
        overclaim::check(&envelope, &backend.capabilities())?;
        Ok(Self {
            backend,
            envelope,
            processes: Arc::new(Reservations::default()),
            in_flight: Arc::new(InFlight::default()),
        })
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }
}

impl<B: Backend + 'static> ContractAdapter<B> {
    /// Runs active-write recovery on one instance: rolls back every
    /// *dispatched* journal that never committed, finishes cleanup forward
    /// for every committed one, and leaves every *open* journal alone ("only
    /// dispatched journals are recovery work"). Transactions this adapter is
    /// publishing right now are skipped. A restarted runtime calls it for
    /// each instance it takes over; `beginActiveWrite` and `resume` run it
    /// themselves.
    pub async fn recover_active_writes(
        &self,
        instance_id: &InstanceId,
    ) -> Result<RecoveryReport, SandboxError> {
        let located = self
            .locate(Operation::BeginActiveWrite, instance_id)
            .await?;
        active_write::recover(
            self,
            Operation::BeginActiveWrite,
            &located.sandbox_id,
            instance_id,
        )
        .await
    }
}

impl<B: Backend> fmt::Debug for ContractAdapter<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContractAdapter")
            .field("backend", &self.backend.name())
            .field("provider_revision", &self.envelope.provider_revision)
            .finish_non_exhaustive()
    }
}

impl<B: Backend + 'static> SandboxProvider for ContractAdapter<B> {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        &self.envelope
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        provision::run(self, request).await
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        write_file::run(self, request).await
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        active_write::begin(self, request).await
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        activate::run(self, instance_id).await
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        execute::run(self, request).await
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        read_file::run(self, request).await
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        read_files::run(self, request).await
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        list_dir::run(self, request).await
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        list_project_dir::run(self, request).await
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        snapshot::run(self, request).await
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        clone_snapshot::run(self, request).await
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        release::run(self, request).await
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        resume::run(self, request).await
    }

    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        destroy::run(self, instance_id).await
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        destroy_snapshot::run(self, snapshot_id).await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        cleanup::run(self, request).await
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        open_process::run(self, request).await
    }
}
