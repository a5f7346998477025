//! Deliberately broken providers make the cases they break *fail*, each
//! with a reason that names what went wrong — and still leave nothing
//! behind.

use crate::common;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use common::{assert_passed, failed_reason, run_one};
use corral_backend::{Backend, BackendError};
use corral_backend_memory::MemoryBackend;
use corral_conformance::targets::{backend_inventory, memory_egress};
use corral_conformance::{ConformanceTarget, EgressFixture, Inventory, Target};
use corral_contract::{
    CleanupRequest, CleanupResult, CloneSnapshotRequest, ConformanceCase, Destinations,
    ExecuteRequest, Handoff, InstanceId, NetworkPolicy, NoRollback, ReadFileRequest,
    ReadFileResult, ReleaseDisposition, ReleaseRequest, ResumeRequest, RetentionMode, SandboxError,
    SandboxExecutionResult, SandboxInstance, SandboxProfile, SandboxProvider,
    SandboxProviderCapabilities, SandboxProvisionRequest, SnapshotId, SnapshotRef, SnapshotRequest,
    WriteFileRequest,
};
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;

/// How a [`Broken`] provider misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flaw {
    /// `writeFile` acknowledges and writes nothing: staged files are lost.
    LosesWrites,
    /// `cleanup` drops the pins before sweeping.
    IgnoresPins,
    /// A `none` profile gets an open allowlist underneath, while every
    /// instance still reports the profile it was asked for.
    OpensNetwork,
    /// `destroySnapshot` of a source also destroys the clones made from it:
    /// clones that depend on their source.
    DependentClones,
    /// `release` of an `ephemeral_zdr` instance answers `destroyed` and
    /// destroys nothing.
    KeepsZdrState,
}

/// The memory adapter with one flaw.
struct Broken {
    inner: ContractAdapter<MemoryBackend>,
    flaw: Flaw,
    /// The profiles asked for, by instance (for `OpensNetwork`).
    asked: Mutex<HashMap<InstanceId, SandboxProfile>>,
    /// The clones made of each source (for `DependentClones`).
    clones: Mutex<HashMap<SnapshotId, Vec<SnapshotId>>>,
    /// The retention of each instance (for `KeepsZdrState`).
    retention: Mutex<HashMap<InstanceId, RetentionMode>>,
}

impl Broken {
    fn report_asked(&self, mut instance: SandboxInstance) -> SandboxInstance {
        let asked = self.asked.lock().unwrap();
        if let Some(profile) = asked.get(&instance.instance_id) {
            instance.profile = profile.clone();
        }
        instance
    }
}

impl SandboxProvider for Broken {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        self.inner.capabilities()
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        if self.flaw != Flaw::OpensNetwork || request.profile.network != NetworkPolicy::None {
            let retention = request.profile.retention;
            let handoff = self.inner.provision(request).await?;
            self.retention
                .lock()
                .unwrap()
                .insert(handoff.value.instance_id.clone(), retention);
            return Ok(handoff);
        }
        let asked = request.profile.clone();
        let fixture = memory_egress();
        let mut opened = request;
        opened.profile.network = NetworkPolicy::Allowlist {
            destinations: Destinations::new(vec![fixture.allowed, fixture.denied]).unwrap(),
        };
        let handoff = self.inner.provision(opened).await?;
        self.asked
            .lock()
            .unwrap()
            .insert(handoff.value.instance_id.clone(), asked);
        Ok(Handoff {
            value: self.report_asked(handoff.value),
            rollback: handoff.rollback,
        })
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        match self.flaw {
            Flaw::LosesWrites => Ok(()),
            Flaw::IgnoresPins
            | Flaw::OpensNetwork
            | Flaw::DependentClones
            | Flaw::KeepsZdrState => self.inner.write_file(request).await,
        }
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        let handoff = self.inner.activate(instance_id).await?;
        Ok(Handoff {
            value: self.report_asked(handoff.value),
            rollback: handoff.rollback,
        })
    }

    fn execute(
        &self,
        request: ExecuteRequest,
    ) -> impl Future<Output = Result<SandboxExecutionResult, SandboxError>> + Send {
        self.inner.execute(request)
    }

    fn read_file(
        &self,
        request: ReadFileRequest,
    ) -> impl Future<Output = Result<ReadFileResult, SandboxError>> + Send {
        self.inner.read_file(request)
    }

    fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> impl Future<Output = Result<Handoff<SnapshotRef>, SandboxError>> + Send {
        self.inner.snapshot(request)
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        let source = request.source.snapshot_id.clone();
        let handoff = self.inner.clone_snapshot(request).await?;
        self.clones
            .lock()
            .unwrap()
            .entry(source)
            .or_default()
            .push(handoff.value.snapshot_id.clone());
        Ok(handoff)
    }

    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        let zdr = self
            .retention
            .lock()
            .unwrap()
            .get(&request.instance_id)
            .copied()
            == Some(RetentionMode::EphemeralZdr);
        if self.flaw == Flaw::KeepsZdrState && zdr {
            return Ok(Handoff::new(ReleaseDisposition::Destroyed, NoRollback));
        }
        self.inner.release(request).await
    }

    fn resume(
        &self,
        request: ResumeRequest,
    ) -> impl Future<Output = Result<Handoff<SandboxInstance>, SandboxError>> + Send {
        self.inner.resume(request)
    }

    fn destroy(
        &self,
        instance_id: InstanceId,
    ) -> impl Future<Output = Result<(), SandboxError>> + Send {
        self.inner.destroy(instance_id)
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        if self.flaw == Flaw::DependentClones {
            let clones = self.clones.lock().unwrap().remove(&snapshot_id);
            for clone in clones.unwrap_or_default() {
                self.inner.destroy_snapshot(clone).await?;
            }
        }
        self.inner.destroy_snapshot(snapshot_id).await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        let request = match self.flaw {
            Flaw::IgnoresPins => {
                CleanupRequest::new(request.now(), request.orphaned_before(), Vec::new()).unwrap()
            }
            Flaw::LosesWrites
            | Flaw::OpensNetwork
            | Flaw::DependentClones
            | Flaw::KeepsZdrState => request,
        };
        self.inner.cleanup(request).await
    }
}

/// A memory backend behind a [`Broken`] adapter.
struct BrokenTarget {
    backend: Arc<MemoryBackend>,
    flaw: Flaw,
}

impl BrokenTarget {
    fn new(flaw: Flaw) -> Self {
        Self {
            backend: Arc::new(MemoryBackend::new()),
            flaw,
        }
    }

    async fn assert_nothing_left(&self) {
        let left = backend_inventory(&*self.backend).await.unwrap();
        assert!(left.is_empty(), "a failed case left {left}");
    }
}

impl Target for BrokenTarget {
    fn name(&self) -> String {
        format!("broken-{:?}", self.flaw).to_lowercase()
    }
}

impl ConformanceTarget for BrokenTarget {
    type Provider = Broken;

    fn provider(&self) -> Result<Broken, SandboxError> {
        Ok(Broken {
            inner: ContractAdapter::new(Arc::clone(&self.backend), envelopes::memory())?,
            flaw: self.flaw,
            asked: Mutex::default(),
            clones: Mutex::default(),
            retention: Mutex::default(),
        })
    }

    fn egress(&self) -> Option<EgressFixture> {
        Some(memory_egress())
    }

    async fn inventory(&self) -> Option<Result<Inventory, BackendError>> {
        Some(backend_inventory(&*self.backend).await)
    }
}

#[tokio::test]
async fn a_provider_that_loses_staged_files_fails_stage_seal_execute() {
    let target = BrokenTarget::new(Flaw::LosesWrites);
    let report = run_one(&target, ConformanceCase::StageSealExecute).await;
    let reason = failed_reason(&report, ConformanceCase::StageSealExecute);
    assert!(
        reason.contains("cat 'input.txt'") && reason.contains("exit code"),
        "{reason}"
    );
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn a_provider_that_loses_files_fails_the_git_staging() {
    let target = BrokenTarget::new(Flaw::LosesWrites);
    let report = run_one(&target, ConformanceCase::StageGitProject).await;
    let reason = failed_reason(&report, ConformanceCase::StageGitProject);
    assert!(reason.contains("README.md"), "{reason}");
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn a_provider_that_ignores_pins_fails_pause_pinning() {
    let target = BrokenTarget::new(Flaw::IgnoresPins);
    let report = run_one(&target, ConformanceCase::PausePinning).await;
    let reason = failed_reason(&report, ConformanceCase::PausePinning);
    assert!(
        reason.starts_with("the pinned snapshot") && reason.contains("before its own expiry"),
        "{reason}"
    );
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn a_provider_that_opens_a_none_network_fails_none_egress() {
    let target = BrokenTarget::new(Flaw::OpensNetwork);
    let report = run_one(&target, ConformanceCase::NoneEgress).await;
    let reason = failed_reason(&report, ConformanceCase::NoneEgress);
    assert_eq!(
        reason,
        "reached api.example.com:443 from an instance whose network policy is none"
    );
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn a_flaw_fails_only_the_cases_it_breaks() {
    let target = BrokenTarget::new(Flaw::OpensNetwork);
    let report = run_one(&target, ConformanceCase::AllowlistEgress).await;
    assert_passed(&report, ConformanceCase::AllowlistEgress);
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn clones_that_die_with_their_source_fail_checkpoint_clone() {
    let target = BrokenTarget::new(Flaw::DependentClones);
    let report = run_one(&target, ConformanceCase::CheckpointClone).await;
    let reason = failed_reason(&report, ConformanceCase::CheckpointClone);
    assert!(
        reason.starts_with("the clone ")
            && reason.contains("does not resume once its source is gone: SandboxSnapshotNotFound"),
        "{reason}"
    );
    target.assert_nothing_left().await;
}

#[tokio::test]
async fn a_zdr_release_that_destroys_nothing_fails_zdr_release() {
    let target = BrokenTarget::new(Flaw::KeepsZdrState);
    let report = run_one(&target, ConformanceCase::ZdrRelease).await;
    let reason = failed_reason(&report, ConformanceCase::ZdrRelease);
    assert!(
        reason.starts_with("the ZDR release left state in the backend: sandboxes [mem-"),
        "{reason}"
    );
    for sandbox in backend_inventory(&*target.backend).await.unwrap().sandboxes {
        target.backend.destroy(&sandbox).await.unwrap();
    }
    target.assert_nothing_left().await;
}
