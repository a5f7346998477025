//! `resume`: rehydrate a snapshot into a fresh `active` instance.
//!
//! Without `snapshots`: `SandboxCapabilityUnavailable{snapshots}`. A
//! snapshot that disagrees with the request on provider, placement,
//! Workspace, Session or profile is refused as
//! `SandboxOperationFailed{resume, integrity_mismatch}` before anything is
//! allocated; the request is then admitted exactly as `provision` admits
//! one, and the snapshot must be a contract snapshot the backend holds, its
//! labels agreeing with the ref and its retention not passed (see
//! `cloneSnapshot`).
//!
//! The backend creates a new sandbox from the snapshot under a fresh
//! instance id; its mount directories and output tree are made (the request
//! may declare mounts the snapshot lacks) and its record written `active`
//! and sealed — there is no provisioning step. Active-write journals the
//! snapshot carried from its source are recovered before the handoff: a
//! dispatched one is rolled back, a committed one finished. The instance
//! echoes the resume request's identity; the rollback destroys exactly the
//! new sandbox.

use corral_backend::Backend;
use corral_contract::{
    Compensated, FailureReason, Handoff, InstanceState, Operation, Requirement, ResumeRequest,
    SandboxError, SandboxInstance, resume_mismatches,
};

use super::ContractAdapter;
use super::active_write;
use super::clone_snapshot::verified_source;
use super::errors::{Subject, failed};
use super::provision::{admit, allocate, new_instance_id};
use super::record::InstanceRecord;
use super::rollback::DestroySandbox;

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    resume: ResumeRequest,
) -> Result<Handoff<SandboxInstance>, SandboxError> {
    let op = Operation::Resume;
    if !adapter.envelope.snapshots {
        return Err(SandboxError::capability_unavailable(Requirement::Snapshots));
    }
    if !resume_mismatches(&resume).is_empty() {
        return Err(failed(op, FailureReason::IntegrityMismatch));
    }
    let instance_id = new_instance_id(op)?;
    let mut create = admit(adapter, op, &instance_id, &resume.request)?;
    let stored = verified_source(adapter, op, &resume.snapshot).await?;
    create.snapshot = Some(stored.info.id);
    let record = InstanceRecord {
        instance_id,
        request: resume.request,
        state: InstanceState::Active,
        sealed: true,
    };
    let source = Subject::Snapshot(&resume.snapshot.snapshot_id);
    let (sandbox_id, owned) = allocate(adapter, op, create, &record, source).await?;
    if let Err(e) = active_write::recover(adapter, op, &sandbox_id, &record.instance_id).await {
        owned.abandon().await;
        return Err(e);
    }
    owned.hand_off();
    Ok(Handoff::new(
        adapter.instance_of(&record),
        DestroySandbox {
            backend: adapter.backend.clone(),
            sandbox_id,
            operation: Compensated::Resume,
        },
    ))
}
