//! [`Narrow`]: any provider behind a narrower envelope.
//!
//! A narrowed provider advertises exactly the narrow envelope and behaves as
//! a provider with that envelope would: what the envelope lacks is refused
//! with the contract's typed refusal at a known point, and the inner
//! provider is never asked. It is how the contract's minimum provider is
//! built from a full one ([`Narrow::minimum`]): "fail closed: `readFile` →
//! `SandboxCapabilityUnavailable{physically_contained_file_read}` … stub:
//! snapshot, cloneSnapshot, resume — unreachable while snapshots: false …
//! omit: readFiles, listDir, listProjectDir, openProcess", release "always
//! `destroyed`" (every instance it admits is `ephemeral_zdr`), and
//! `max_mounts: 0`.
//!
//! The narrow envelope may not claim more than the inner one: every list a
//! subset, every capability flag implied by the inner's, every grade and
//! enforcement level at most the inner's, `max_mounts` at most the inner's;
//! the identity the inner provider echoes (`placement`, both revisions) is
//! unchanged, and `image_mode` is the inner's or `host` (which claims less).

use corral_contract::{
    ActiveWriteRequest, ActiveWriteTransaction, CapabilityDeclaration, CapabilityField,
    CleanupRequest, CleanupResult, CloneSnapshotRequest, EnforcementAxis, ExecuteRequest, Handoff,
    ImageMode, InstanceId, ListDirRequest, ListDirResult, ListProjectDirRequest,
    ListProjectDirResult, LiveProcess, NetworkMode, OpenProcessRequest, Operation,
    ProtocolViolation, ReadFileRequest, ReadFileResult, ReadFilesRequest, ReadFilesResult,
    ReleaseDisposition, ReleaseRequest, Requirement, ResumeRequest, RetentionMode, SandboxError,
    SandboxExecutionResult, SandboxInstance, SandboxProvider, SandboxProviderCapabilities,
    SandboxProvisionRequest, SnapshotCustody, SnapshotId, SnapshotRef, SnapshotRequest,
    WriteFileRequest,
};
use serde::Serialize;

use crate::runtime::optional;
use crate::select::ProfileRequirements;

/// A provider held to a narrower envelope.
pub struct Narrow<P> {
    inner: P,
    envelope: SandboxProviderCapabilities,
}

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unrenderable: {e}>"))
}

fn wider(field: &str, inner: String, narrow: String) -> SandboxError {
    ProtocolViolation::new(field, inner, narrow).into_error(Operation::Capabilities)
}

fn subset<T: PartialEq + Serialize>(
    field: CapabilityField,
    narrow: &[T],
    inner: &[T],
) -> Result<(), SandboxError> {
    if narrow.iter().all(|item| inner.contains(item)) {
        Ok(())
    } else {
        Err(wider(
            field.as_str(),
            format!("a subset of {}", json(inner)),
            json(narrow),
        ))
    }
}

fn at_most<T: PartialOrd + Serialize>(
    field: &str,
    narrow: &T,
    inner: &T,
) -> Result<(), SandboxError> {
    if narrow <= inner {
        Ok(())
    } else {
        Err(wider(
            field,
            format!("at most {}", json(inner)),
            json(narrow),
        ))
    }
}

fn equal<T: PartialEq + Serialize>(
    field: CapabilityField,
    narrow: &T,
    inner: &T,
) -> Result<(), SandboxError> {
    if narrow == inner {
        Ok(())
    } else {
        Err(wider(field.as_str(), json(inner), json(narrow)))
    }
}

/// Refuses a `narrow` envelope that claims more than `inner`, naming the
/// first field (in declaration order) that does, with both values.
pub fn check_narrower(
    narrow: &SandboxProviderCapabilities,
    inner: &SandboxProviderCapabilities,
) -> Result<(), SandboxError> {
    use CapabilityField as F;
    equal(F::Placement, &narrow.placement, &inner.placement)?;
    subset(F::Tiers, &narrow.tiers, &inner.tiers)?;
    subset(F::Platforms, &narrow.platforms, &inner.platforms)?;
    if narrow.image_mode != ImageMode::Host {
        equal(F::ImageMode, &narrow.image_mode, &inner.image_mode)?;
    }
    subset(
        F::PackageManagers,
        &narrow.package_managers,
        &inner.package_managers,
    )?;
    subset(F::NetworkModes, &narrow.network_modes, &inner.network_modes)?;
    subset(
        F::RetentionModes,
        &narrow.retention_modes,
        &inner.retention_modes,
    )?;
    at_most(F::Snapshots.as_str(), &narrow.snapshots, &inner.snapshots)?;
    if narrow.snapshot_custody == SnapshotCustody::Provider
        && inner.snapshot_custody != SnapshotCustody::Provider
    {
        equal(
            F::SnapshotCustody,
            &narrow.snapshot_custody,
            &inner.snapshot_custody,
        )?;
    }
    for (field, n, i) in [
        (
            F::SnapshotClone,
            narrow.snapshot_clone,
            inner.snapshot_clone,
        ),
        (F::ListDir, narrow.list_dir, inner.list_dir),
        (
            F::ListProjectDir,
            narrow.list_project_dir,
            inner.list_project_dir,
        ),
        (F::ReadFiles, narrow.read_files, inner.read_files),
        (
            F::PhysicallyContainedFileRead,
            narrow.physically_contained_file_read,
            inner.physically_contained_file_read,
        ),
        (
            F::ActiveMountWrite,
            narrow.active_mount_write,
            inner.active_mount_write,
        ),
        (F::OpenProcess, narrow.open_process, inner.open_process),
    ] {
        at_most(field.as_str(), &n, &i)?;
    }
    at_most(
        F::EgressCertification.as_str(),
        &narrow.egress_certification,
        &inner.egress_certification,
    )?;
    for axis in EnforcementAxis::ALL {
        at_most(
            &format!("enforcement.{axis}"),
            &narrow.enforcement.level(*axis),
            &inner.enforcement.level(*axis),
        )?;
    }
    at_most(
        F::MaxMounts.as_str(),
        &narrow.max_mounts.get(),
        &inner.max_mounts.get(),
    )?;
    equal(
        F::ProviderRevision,
        &narrow.provider_revision,
        &inner.provider_revision,
    )?;
    equal(
        F::MaterializationRevision,
        &narrow.materialization_revision,
        &inner.materialization_revision,
    )
}

/// The contract's minimum provider over `inner`: the inner provider's
/// identity (placement, tiers, platforms, image mode, enforcement,
/// revisions) with every optional capability absent — no package managers,
/// `network_modes: ["none"]`, `retention_modes: ["ephemeral_zdr"]`, no
/// snapshots (custody `runner`), no optional member, `unsupported` egress,
/// `max_mounts: 0`. Refused when the inner provider cannot enforce `none`
/// or offer `ephemeral_zdr`.
pub fn minimum_of(
    inner: &SandboxProviderCapabilities,
) -> Result<SandboxProviderCapabilities, SandboxError> {
    if !inner.network_modes.contains(&NetworkMode::None) {
        return Err(SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::NetworkPolicy,
            capability: Some(CapabilityField::NetworkModes),
        });
    }
    if !inner.retention_modes.contains(&RetentionMode::EphemeralZdr) {
        return Err(SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Retention,
            capability: Some(CapabilityField::RetentionModes),
        });
    }
    // The optional capabilities come from the contract's own minimum
    // envelope (one source of truth); the identity stays the inner one's.
    let own = inner.declaration();
    let declaration = CapabilityDeclaration {
        placement: own.placement,
        tiers: own.tiers.clone(),
        platforms: own.platforms.clone(),
        image_mode: own.image_mode,
        enforcement: own.enforcement,
        provider_revision: own.provider_revision.clone(),
        materialization_revision: own.materialization_revision.clone(),
        ..SandboxProviderCapabilities::minimum().into_declaration()
    };
    SandboxProviderCapabilities::new(declaration).map_err(|invalid| {
        ProtocolViolation::new(
            invalid.field(),
            "a valid minimum envelope",
            invalid.to_string(),
        )
        .into_error(Operation::Capabilities)
    })
}

impl<P: SandboxProvider> Narrow<P> {
    /// Puts `inner` behind `envelope`, refusing an envelope wider than the
    /// inner one as `SandboxProtocolInvalid{capabilities}` naming the field
    /// ([`check_narrower`]).
    pub fn new(inner: P, envelope: SandboxProviderCapabilities) -> Result<Self, SandboxError> {
        check_narrower(&envelope, inner.capabilities())?;
        Ok(Self { inner, envelope })
    }

    /// `inner` narrowed to the contract's minimum provider ([`minimum_of`]).
    pub fn minimum(inner: P) -> Result<Self, SandboxError> {
        let envelope = minimum_of(inner.capabilities())?;
        Self::new(inner, envelope)
    }

    /// The inner provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Refuses a request for an instance the narrow envelope cannot serve.
    fn admit(&self, request: &SandboxProvisionRequest) -> Result<(), SandboxError> {
        match ProfileRequirements::for_request(request).first_unmet(&self.envelope) {
            None => Ok(()),
            Some(requirement) => Err(SandboxError::capability_unavailable(requirement)),
        }
    }

    fn snapshots(&self) -> Result<(), SandboxError> {
        if self.envelope.snapshots {
            Ok(())
        } else {
            Err(SandboxError::capability_unavailable(Requirement::Snapshots))
        }
    }
}

impl<P: SandboxProvider> SandboxProvider for Narrow<P> {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        &self.envelope
    }

    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.admit(&request)?;
        self.inner.provision(request).await
    }

    async fn write_file(&self, request: WriteFileRequest) -> Result<(), SandboxError> {
        self.inner.write_file(request).await
    }

    async fn begin_active_write(
        &self,
        request: ActiveWriteRequest,
    ) -> Result<Box<dyn ActiveWriteTransaction>, SandboxError> {
        optional::declared(Operation::BeginActiveWrite, &self.envelope)?;
        self.inner.begin_active_write(request).await
    }

    async fn activate(
        &self,
        instance_id: InstanceId,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.inner.activate(instance_id).await
    }

    async fn execute(
        &self,
        request: ExecuteRequest,
    ) -> Result<SandboxExecutionResult, SandboxError> {
        self.inner.execute(request).await
    }

    async fn read_file(&self, request: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        optional::contained_read(&self.envelope)?;
        self.inner.read_file(request).await
    }

    async fn read_files(&self, request: ReadFilesRequest) -> Result<ReadFilesResult, SandboxError> {
        optional::declared(Operation::ReadFiles, &self.envelope)?;
        self.inner.read_files(request).await
    }

    async fn list_dir(&self, request: ListDirRequest) -> Result<ListDirResult, SandboxError> {
        optional::declared(Operation::ListDir, &self.envelope)?;
        self.inner.list_dir(request).await
    }

    async fn list_project_dir(
        &self,
        request: ListProjectDirRequest,
    ) -> Result<ListProjectDirResult, SandboxError> {
        optional::declared(Operation::ListProjectDir, &self.envelope)?;
        self.inner.list_project_dir(request).await
    }

    async fn snapshot(
        &self,
        request: SnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.snapshots()?;
        self.inner.snapshot(request).await
    }

    async fn clone_snapshot(
        &self,
        request: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.snapshots()?;
        if !self.envelope.snapshot_clone {
            return Err(SandboxError::SandboxCapabilityUnavailable {
                requirement: Requirement::Snapshots,
                capability: Some(CapabilityField::SnapshotClone),
            });
        }
        self.inner.clone_snapshot(request).await
    }

    /// Every instance a ZDR-only envelope admits is `ephemeral_zdr`, so the
    /// inner provider destroys it.
    async fn release(
        &self,
        request: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.inner.release(request).await
    }

    async fn resume(
        &self,
        request: ResumeRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.snapshots()?;
        self.admit(&request.request)?;
        self.inner.resume(request).await
    }

    async fn destroy(&self, instance_id: InstanceId) -> Result<(), SandboxError> {
        self.inner.destroy(instance_id).await
    }

    async fn destroy_snapshot(&self, snapshot_id: SnapshotId) -> Result<(), SandboxError> {
        self.inner.destroy_snapshot(snapshot_id).await
    }

    async fn cleanup(&self, request: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        self.inner.cleanup(request).await
    }

    async fn open_process(
        &self,
        request: OpenProcessRequest,
    ) -> Result<Box<dyn LiveProcess>, SandboxError> {
        optional::declared(Operation::OpenProcess, &self.envelope)?;
        self.inner.open_process(request).await
    }
}
