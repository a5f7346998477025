//! Fixtures for the `ContractAdapter` tests: requests, adapters over the
//! memory and local backends, and [`faulty::Faulty`], a backend wrapper that
//! dies after a chosen number of mutations.

pub mod faulty;

use crate::sp;
use std::sync::Arc;
use std::time::SystemTime;

use corral_backend::Backend;
use corral_backend_local::LocalBackend;
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;

pub const IMAGE: &str = "registry.example/corral/base@sha256:\
    0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

pub fn path(s: &str) -> SandboxPath {
    SandboxPath::new(s).unwrap()
}

/// Now, plus `seconds` (negative: in the past).
pub fn in_seconds(seconds: i64) -> Timestamp {
    let now = Timestamp::from_system_time(SystemTime::now()).unwrap();
    now.checked_add_millis(seconds * 1000).unwrap()
}

/// The memory adapter under the memory envelope.
pub fn memory() -> ContractAdapter<MemoryBackend> {
    ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory()).unwrap()
}

/// The memory backend under another envelope.
pub fn memory_with(
    change: impl FnOnce(&mut CapabilityDeclaration),
) -> ContractAdapter<MemoryBackend> {
    let mut declaration = envelopes::memory().into_declaration();
    change(&mut declaration);
    let envelope = SandboxProviderCapabilities::new(declaration).unwrap();
    ContractAdapter::new(Arc::new(MemoryBackend::new()), envelope).unwrap()
}

/// The local adapter under the local envelope, on a fresh state directory.
pub fn local() -> (ContractAdapter<LocalBackend>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let backend = LocalBackend::open(dir.path().join("state")).unwrap();
    let adapter = ContractAdapter::new(Arc::new(backend), envelopes::local()).unwrap();
    (adapter, dir)
}

/// What an instance is asked to be.
#[derive(Debug, Clone)]
pub struct Spec {
    pub retention: RetentionMode,
    pub network: Option<NetworkPolicy>,
    pub mounts: Vec<(&'static str, MountAccess)>,
    pub session: &'static str,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            retention: RetentionMode::Durable,
            network: None,
            mounts: vec![
                ("/data", MountAccess::ReadOnly),
                ("/project", MountAccess::ReadWrite),
            ],
            session: "session-1",
        }
    }
}

impl Spec {
    pub fn zdr() -> Self {
        Self {
            retention: RetentionMode::EphemeralZdr,
            ..Self::default()
        }
    }

    pub fn mounts(mounts: Vec<(&'static str, MountAccess)>) -> Self {
        Self {
            mounts,
            ..Self::default()
        }
    }
}

pub fn allowlist(destination: &str) -> NetworkPolicy {
    NetworkPolicy::Allowlist {
        destinations: Destinations::new(vec![HostPort::new(destination).unwrap()]).unwrap(),
    }
}

/// The network policy a spec gets under `envelope`: its own, else `none`
/// where the envelope lists it, else an allowlist.
fn network_for(spec: &Spec, envelope: &SandboxProviderCapabilities) -> NetworkPolicy {
    spec.network.clone().unwrap_or_else(|| {
        if envelope.network_modes.contains(&NetworkMode::None) {
            NetworkPolicy::None
        } else {
            allowlist("example.com:443")
        }
    })
}

pub fn request(envelope: &SandboxProviderCapabilities, spec: &Spec) -> SandboxProvisionRequest {
    SandboxProvisionRequest {
        provider: ProviderId::new("corral-test").unwrap(),
        placement: envelope.placement,
        workspace_id: WorkspaceId::new("workspace-1").unwrap(),
        session_id: SessionId::new(spec.session).unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("attempt-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(3).unwrap(),
        target: TargetId::new("target-1").unwrap(),
        profile: SandboxProfile {
            id: ProfileId::new("profile-1").unwrap(),
            version: ProfileVersion::new("7").unwrap(),
            digest: Digest::from_sha256_bytes([9; 32]),
            retention: spec.retention,
            network: network_for(spec, envelope),
            max_duration_seconds: DurationSeconds::new(600).unwrap(),
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform: envelope.platforms[0],
        root_image: ImageReference::new(IMAGE).unwrap(),
        mounts: Mounts::new(
            spec.mounts
                .iter()
                .map(|(p, access)| MountSpec {
                    path: path(p),
                    access: *access,
                })
                .collect(),
        )
        .unwrap(),
        expires_at: in_seconds(3600),
    }
}

/// Provisions `spec`, taking ownership of the handoff.
pub async fn provision<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    spec: &Spec,
) -> (SandboxProvisionRequest, SandboxInstance) {
    let request = request(adapter.capabilities(), spec);
    let instance = adapter.provision(request.clone()).await.unwrap().value;
    (request, instance)
}

/// Provisions and activates `spec`.
pub async fn active<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    spec: &Spec,
) -> (SandboxProvisionRequest, SandboxInstance) {
    let (request, instance) = provision(adapter, spec).await;
    let active = adapter
        .activate(instance.instance_id.clone())
        .await
        .unwrap()
        .value;
    (request, active)
}

pub fn write(instance: &SandboxInstance, at: &str, content: &[u8]) -> WriteFileRequest {
    WriteFileRequest {
        instance_id: instance.instance_id.clone(),
        path: path(at),
        content: FileContent::new(content.to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    }
}

pub fn shell(instance: &SandboxInstance, script: &str) -> ExecuteRequest {
    ExecuteRequest {
        instance_id: instance.instance_id.clone(),
        command: SandboxCommand::new(
            CommandLine::Shell {
                shell: ShellScript::new(script).unwrap(),
            },
            TimeoutSeconds::new(30).unwrap(),
            OutputLimitBytes::new(1024 * 1024).unwrap(),
        ),
    }
}

pub fn read(instance: &SandboxInstance, root: &str, at: &str, max: u64) -> ReadFileRequest {
    ReadFileRequest::new(
        instance.instance_id.clone(),
        path(at),
        path(root),
        MaximumBytes::new(max).unwrap(),
    )
    .unwrap()
}

/// The backend's sandbox id of a contract instance (found by its key).
pub async fn sandbox_of<B: Backend>(adapter: &ContractAdapter<B>, id: &InstanceId) -> String {
    adapter
        .backend()
        .find(&id.as_str().try_into().unwrap())
        .await
        .unwrap()
        .expect("the instance's sandbox exists")
        .id
}

/// Whether the backend still holds the instance's sandbox.
pub async fn exists<B: Backend>(adapter: &ContractAdapter<B>, id: &InstanceId) -> bool {
    adapter
        .backend()
        .find(&id.as_str().try_into().unwrap())
        .await
        .unwrap()
        .is_some()
}

/// Reads a file of an instance through the backend, bypassing the adapter.
pub async fn backend_read<B: Backend>(
    adapter: &ContractAdapter<B>,
    id: &InstanceId,
    at: &str,
) -> Option<Vec<u8>> {
    let sandbox = sandbox_of(adapter, id).await;
    adapter.backend().files().read(&sandbox, &sp(at)).await.ok()
}

/// Unwraps the error of a result whose success type is not `Debug`.
pub fn refused<T>(result: Result<T, SandboxError>) -> SandboxError {
    match result {
        Ok(_) => panic!("expected a refusal"),
        Err(e) => e,
    }
}
