//! The live objects unary members return, across the wire: a handoff the
//! runtime rejects is rolled back on the server (nothing is left in the
//! backend); one it accepts is settled and kept; an active-write
//! transaction commits (its dispatch marker invoked once) or rolls back.

use super::common;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{provision_active, provision_request, runtime_over, serve, token, with_project};
use corral_backend_memory::MemoryBackend;
use corral_conformance::targets::backend_inventory;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_wire::WireProvider;

/// The memory adapter, except that `provision` returns an instance whose
/// `expires_at` is one second later than requested.
struct ShiftsExpiry(ContractAdapter<MemoryBackend>);

impl SandboxProvider for ShiftsExpiry {
    fn capabilities(&self) -> &SandboxProviderCapabilities {
        self.0.capabilities()
    }
    async fn provision(
        &self,
        request: SandboxProvisionRequest,
    ) -> Result<Handoff<SandboxInstance>, SandboxError> {
        let mut handoff = self.0.provision(request).await?;
        handoff.value.expires_at = handoff.value.expires_at.checked_add_millis(1000).unwrap();
        Ok(handoff)
    }
    async fn write_file(&self, r: WriteFileRequest) -> Result<(), SandboxError> {
        self.0.write_file(r).await
    }
    async fn activate(&self, id: InstanceId) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.0.activate(id).await
    }
    async fn execute(&self, r: ExecuteRequest) -> Result<SandboxExecutionResult, SandboxError> {
        self.0.execute(r).await
    }
    async fn read_file(&self, r: ReadFileRequest) -> Result<ReadFileResult, SandboxError> {
        self.0.read_file(r).await
    }
    async fn snapshot(&self, r: SnapshotRequest) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.0.snapshot(r).await
    }
    async fn clone_snapshot(
        &self,
        r: CloneSnapshotRequest,
    ) -> Result<Handoff<SnapshotRef>, SandboxError> {
        self.0.clone_snapshot(r).await
    }
    async fn release(
        &self,
        r: ReleaseRequest,
    ) -> Result<Handoff<ReleaseDisposition>, SandboxError> {
        self.0.release(r).await
    }
    async fn resume(&self, r: ResumeRequest) -> Result<Handoff<SandboxInstance>, SandboxError> {
        self.0.resume(r).await
    }
    async fn destroy(&self, id: InstanceId) -> Result<(), SandboxError> {
        self.0.destroy(id).await
    }
    async fn destroy_snapshot(&self, id: SnapshotId) -> Result<(), SandboxError> {
        self.0.destroy_snapshot(id).await
    }
    async fn cleanup(&self, r: CleanupRequest) -> Result<CleanupResult, SandboxError> {
        self.0.cleanup(r).await
    }
}

// Contract spec, "Allocation handoff": rollback is a cold compensation for
// that exact allocation, invoked when the Runner rejects value, and it must
// not derive its authority from value: the wire sends only a ticket, the
// server runs the provider's own compensation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_handoff_is_rolled_back_on_the_server() {
    let backend = Arc::new(MemoryBackend::new());
    let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let (runtime, server) = runtime_over(ShiftsExpiry(adapter)).await;
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let error = runtime.provision(request).await.err().unwrap();
    match &error {
        SandboxError::SandboxProtocolInvalid {
            operation, field, ..
        } => {
            assert_eq!(*operation, Operation::InstanceIdentity);
            assert_eq!(field, "expires_at");
        }
        other => panic!("expected an identity refusal, got {other}"),
    }
    let left = backend_inventory(&*backend).await.unwrap();
    assert!(left.is_empty(), "the rollback ran on the server: {left}");
    server.shut_down().await;
}

// Contract spec, "Allocation handoff": delivery is at-least-once with
// idempotent effect; destroy and rollback may be invoked again after a lost
// response and each must settle the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_handoff_is_kept_and_its_rollback_asked_twice_settles_once() {
    let backend = Arc::new(MemoryBackend::new());
    let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let server = serve(adapter).await;
    let client = WireProvider::connect(&server.endpoint(), token())
        .await
        .unwrap();
    let request = provision_request(client.capabilities(), "memory", RetentionMode::EphemeralZdr);
    // Accepted: the rollback is dropped (settled), the instance stays.
    let (kept, rollback) = client
        .provision(request.clone())
        .await
        .unwrap()
        .into_parts();
    drop(rollback);
    // Rolled back twice: the second call settles the same way.
    let (gone, rollback) = client.provision(request).await.unwrap().into_parts();
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    let left = backend_inventory(&*backend).await.unwrap();
    assert_eq!(left.sandboxes.len(), 1, "{left}");
    client.destroy(kept.instance_id.clone()).await.unwrap();
    client.destroy(kept.instance_id).await.unwrap();
    client.destroy(gone.instance_id).await.unwrap();
    assert!(backend_inventory(&*backend).await.unwrap().is_empty());
    server.shut_down().await;
}

/// Counts its invocations.
#[derive(Default)]
struct Marker(AtomicUsize);

impl DispatchMarker for Marker {
    fn dispatched(&self, _: &TransactionId) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn batch(instance: &SandboxInstance, path: &str, content: &[u8]) -> ActiveWriteRequest {
    ActiveWriteRequest {
        instance_id: instance.instance_id.clone(),
        batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
            path: SandboxPath::new(path).unwrap(),
            content: FileContent::new(content.to_vec()).unwrap(),
            mode: FileMode::DEFAULT,
        }])
        .unwrap(),
    }
}

async fn cat(runtime: &Runtime<WireProvider>, instance: &SandboxInstance, path: &str) -> Vec<u8> {
    let request = ExecuteRequest {
        instance_id: instance.instance_id.clone(),
        command: SandboxCommand::new(
            CommandLine::Shell {
                shell: ShellScript::new(format!("cat {path} 2>/dev/null; true")).unwrap(),
            },
            TimeoutSeconds::new(30).unwrap(),
            OutputLimitBytes::new(1024 * 1024).unwrap(),
        ),
    };
    let result = runtime.execute(request).await.unwrap();
    result.stdout.content.to_vec()
}

// Contract spec, "The operations" (beginActiveWrite): immediately before
// the journal becomes dispatched the provider invokes the transaction's
// dispatch marker (once); a rolled-back batch publishes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_writes_commit_and_roll_back_across_the_wire() {
    let backend = Arc::new(MemoryBackend::new());
    let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
    let (runtime, server) = runtime_over(adapter).await;
    let request = provision_request(
        runtime.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let instance = provision_active(&runtime, with_project(request)).await;

    let tx = runtime
        .begin_active_write(batch(&instance, "/project/a.txt", b"committed\n"))
        .await
        .unwrap();
    assert_eq!(tx.state(), JournalState::Open);
    let marker = Marker::default();
    tx.commit(&marker).await.unwrap();
    assert_eq!(tx.state(), JournalState::Committed);
    assert_eq!(marker.0.load(Ordering::SeqCst), 1);
    assert_eq!(
        cat(&runtime, &instance, "/project/a.txt").await,
        b"committed\n"
    );

    let tx = runtime
        .begin_active_write(batch(&instance, "/project/b.txt", b"never\n"))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(tx.state(), JournalState::RolledBack);
    assert_eq!(cat(&runtime, &instance, "/project/b.txt").await, b"");
    // The server forgot the settled transaction: committing it again is
    // refused, naming the member.
    let again = tx.commit(&marker).await.unwrap_err();
    assert_eq!(
        again,
        SandboxError::operation_failed(Operation::BeginActiveWrite, FailureReason::NotFound)
    );
    runtime.destroy(instance.instance_id).await.unwrap();
    assert!(backend_inventory(&*backend).await.unwrap().is_empty());
    server.shut_down().await;
}
