//! Honest flows through the runtime that the rejection tests build on:
//! an instance with staged files, and the durable lifecycle that walks all
//! six handoff members.

use corral_contract::{
    CloneSnapshotRequest, Compensated, FileContent, FileMode, InstanceState, ReleaseDisposition,
    ReleaseRequest, ResumeRequest, RetentionMode, SandboxError, SandboxInstance, SandboxProvider,
    SandboxProvisionRequest, SessionId, SnapshotRequest, Timestamp, WriteFileRequest,
};

use super::fixtures::{LiarRuntime, in_an_hour, path, provision_request};

/// A day from now: a snapshot retention deadline distinct from the
/// instance's hour.
pub fn in_a_day() -> Timestamp {
    in_an_hour()
        .checked_add_millis(23 * 3_600_000)
        .expect("a day from now is in range")
}

/// The Session a clone is bound to.
pub fn fork_session() -> SessionId {
    SessionId::new("session-fork").expect("literal")
}

/// Writes `content` at `at` through the runtime.
pub async fn write(runtime: &LiarRuntime, instance: &SandboxInstance, at: &str, content: &[u8]) {
    runtime
        .write_file(WriteFileRequest {
            instance_id: instance.instance_id.clone(),
            path: path(at),
            content: FileContent::new(content.to_vec()).expect("a small file"),
            mode: FileMode::default(),
        })
        .await
        .unwrap_or_else(|e| panic!("an admitted write of {at} succeeds: {e}"));
}

/// Provisions an instance, stages `files` (paths in a declared mount or
/// the output tree) while `provisioning`, and activates it — all honestly.
pub async fn active_with_files(
    runtime: &LiarRuntime,
    retention: RetentionMode,
    files: &[(&str, &[u8])],
) -> (SandboxProvisionRequest, SandboxInstance) {
    let request = provision_request(runtime.capabilities(), retention);
    let provisioned = runtime
        .provision(request.clone())
        .await
        .expect("an honest provision is accepted")
        .value;
    for (at, content) in files {
        write(runtime, &provisioned, at, content).await;
    }
    let active = runtime
        .activate(provisioned.instance_id)
        .await
        .expect("an honest activate is accepted")
        .value;
    assert_eq!(active.state, InstanceState::Active);
    (request, active)
}

/// What the durable lifecycle produced that the tests look at.
#[derive(Debug, Default)]
pub struct Lifecycle {
    /// The request `resume` was sent.
    pub resume_request: Option<ResumeRequest>,
    /// The instance `resume` rehydrated.
    pub resumed: Option<SandboxInstance>,
}

/// The six handoff members in the order the durable lifecycle calls them.
pub const HANDOFF_ORDER: [Compensated; 6] = [
    Compensated::Provision,
    Compensated::Activate,
    Compensated::Snapshot,
    Compensated::CloneSnapshot,
    Compensated::Release,
    Compensated::Resume,
];

/// Walks a durable instance through `provision`, `activate`, `snapshot`,
/// `cloneSnapshot`, `release` and `resume`, stopping at the first refusal.
/// Every member before the refused one must be accepted; the error is
/// returned with what was produced up to it.
pub async fn durable_lifecycle(runtime: &LiarRuntime) -> (Lifecycle, Result<(), SandboxError>) {
    let mut done = Lifecycle::default();
    let outcome = walk(runtime, &mut done).await;
    (done, outcome)
}

async fn walk(runtime: &LiarRuntime, done: &mut Lifecycle) -> Result<(), SandboxError> {
    let request = provision_request(runtime.capabilities(), RetentionMode::Durable);
    let provisioned = runtime.provision(request.clone()).await?.value;

    let active = runtime.activate(provisioned.instance_id).await?.value;

    let snapshot = runtime
        .snapshot(SnapshotRequest {
            instance_id: active.instance_id.clone(),
            expires_at: in_a_day(),
        })
        .await?
        .value;

    runtime
        .clone_snapshot(CloneSnapshotRequest {
            source: snapshot,
            target_session_id: fork_session(),
        })
        .await?;

    let disposition = runtime
        .release(ReleaseRequest {
            instance_id: active.instance_id.clone(),
            snapshot_expires_at: Some(in_a_day()),
        })
        .await?
        .value;
    let released = match disposition {
        ReleaseDisposition::Released { snapshot } => *snapshot,
        ReleaseDisposition::Destroyed => {
            panic!("the runtime accepted a destroyed disposition for a durable release")
        }
    };

    let resume = ResumeRequest {
        request: SandboxProvisionRequest {
            expires_at: in_an_hour(),
            ..request
        },
        snapshot: released,
    };
    done.resume_request = Some(resume.clone());
    let resumed = runtime.resume(resume).await?.value;
    done.resumed = Some(resumed);
    Ok(())
}
