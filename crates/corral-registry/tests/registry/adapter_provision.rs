//! `provision`: admission, the instance echoing the request, what is
//! persisted in the backend, and the rollback.

use crate::adapter_support;
use crate::sp;
use std::sync::Arc;

use adapter_support::faulty::Faulty;
use adapter_support::*;
use corral_backend::Backend;
use corral_backend_memory::MemoryBackend;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::adapter::record::{self, InstanceRecord, RECORD_PATH};

/// "Allocate the instance … prepare declared mounts; return it in
/// `provisioning`", every identity field echoing the request.
async fn provision_echoes_the_request<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let request = request(adapter.capabilities(), &Spec::default());
    let handoff = adapter.provision(request.clone()).await.unwrap();
    let instance = handoff.value;
    assert!(
        identity_mismatches(
            &request,
            &instance,
            adapter.capabilities(),
            InstanceState::Provisioning
        )
        .is_empty()
    );
    assert_eq!(instance.expires_at, request.expires_at);
    assert_eq!(
        instance.materialization.image_digest,
        request.root_image.digest()
    );
    assert!(instance.instance_id.as_str().starts_with("ci-"));
    // The declared mounts and the output tree exist.
    let sandbox = sandbox_of(adapter, &instance.instance_id).await;
    for dir in [
        "/data",
        "/project",
        "/mnt/session/outputs",
        "/workspace/.checkfu",
    ] {
        let stat = adapter
            .backend()
            .files()
            .stat(&sandbox, &sp(dir))
            .await
            .unwrap();
        assert_eq!(stat.file_type, corral_backend::FileType::Directory, "{dir}");
    }
}

#[tokio::test]
async fn provision_echoes_the_request_on_memory() {
    provision_echoes_the_request(&memory()).await;
}

#[tokio::test]
async fn provision_echoes_the_request_on_local() {
    let (adapter, _dir) = local();
    provision_echoes_the_request(&adapter).await;
}

/// "No state the adapter alone holds is needed": labels on the sandbox and
/// the record in the control root.
async fn identity_is_persisted_in_the_backend<B: Backend + 'static>(adapter: &ContractAdapter<B>) {
    let (request, instance) = provision(adapter, &Spec::default()).await;
    let listed = adapter
        .backend()
        .list(
            &corral_backend::Labels::new()
                .with(record::CONTRACT, record::KIND_INSTANCE)
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let labels = &listed[0].labels;
    assert_eq!(
        listed[0].key.as_deref(),
        Some(instance.instance_id.as_str())
    );
    assert_eq!(labels[record::INSTANCE_ID], instance.instance_id.as_str());
    assert_eq!(labels[record::EXPIRES_AT], request.expires_at.to_string());
    assert_eq!(labels[record::WORKSPACE_ID], "workspace-1");
    assert_eq!(labels[record::SESSION_ID], "session-1");
    assert_eq!(
        labels[record::REQUEST_SHA256],
        InstanceRecord::request_sha256(&request).unwrap()
    );
    let bytes = backend_read(adapter, &instance.instance_id, RECORD_PATH)
        .await
        .unwrap();
    let stored: InstanceRecord = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        stored,
        InstanceRecord {
            instance_id: instance.instance_id.clone(),
            request,
            state: InstanceState::Provisioning,
            sealed: false,
        }
    );
}

#[tokio::test]
async fn identity_is_persisted_in_the_backend_on_memory() {
    identity_is_persisted_in_the_backend(&memory()).await;
}

#[tokio::test]
async fn identity_is_persisted_in_the_backend_on_local() {
    let (adapter, _dir) = local();
    identity_is_persisted_in_the_backend(&adapter).await;
}

/// "rollback … for that exact allocation", "must not derive its authority
/// from value", "may all be invoked again … each must settle the same way".
async fn provision_rollback_destroys_exactly_its_sandbox<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
) {
    let spec = Spec::default();
    let kept = adapter
        .provision(request(adapter.capabilities(), &spec))
        .await
        .unwrap()
        .value;
    let handoff = adapter
        .provision(request(adapter.capabilities(), &spec))
        .await
        .unwrap();
    let (rejected, rollback) = handoff.into_parts();
    rollback.rollback().await.unwrap();
    rollback.rollback().await.unwrap();
    assert!(!exists(adapter, &rejected.instance_id).await);
    assert!(exists(adapter, &kept.instance_id).await);
    let err = adapter
        .activate(rejected.instance_id.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        SandboxError::SandboxInstanceNotFound {
            instance_id: rejected.instance_id
        }
    );
}

#[tokio::test]
async fn provision_rollback_destroys_exactly_its_sandbox_on_memory() {
    provision_rollback_destroys_exactly_its_sandbox(&memory()).await;
}

#[tokio::test]
async fn provision_rollback_destroys_exactly_its_sandbox_on_local() {
    let (adapter, _dir) = local();
    provision_rollback_destroys_exactly_its_sandbox(&adapter).await;
}

fn unavailable(requirement: Requirement) -> SandboxError {
    SandboxError::capability_unavailable(requirement)
}

#[tokio::test]
async fn provision_refuses_before_allocating_what_the_envelope_does_not_offer() {
    let (adapter, _dir) = local();
    let base = request(adapter.capabilities(), &Spec::default());
    let mut cases: Vec<(SandboxProvisionRequest, SandboxError)> = Vec::new();
    // `local` cannot enforce `none`: "you do not support the requested mode".
    let mut none = base.clone();
    none.profile.network = NetworkPolicy::None;
    cases.push((none, unavailable(Requirement::NetworkPolicy)));
    let mut other_platform = base.clone();
    other_platform.platform = if base.platform == Platform::LINUX_AMD64 {
        Platform::LINUX_ARM64
    } else {
        Platform::LINUX_AMD64
    };
    cases.push((other_platform, unavailable(Requirement::Platform)));
    let mut packages = base.clone();
    packages.profile.packages.push(PackageSpec {
        manager: PackageManager::Apt,
        name: PackageName::new("curl").unwrap(),
        version: None,
    });
    cases.push((packages, unavailable(Requirement::Packages)));
    let mut resources = base.clone();
    resources.profile.resources.memory_bytes = Some(MemoryBytes::new(1 << 30).unwrap());
    cases.push((resources, unavailable(Requirement::Resources)));
    // "A mount plan overlapping … /workspace/.checkfu … is refused".
    let mut reserved = base.clone();
    reserved.mounts = Mounts::new(vec![MountSpec {
        path: path("/workspace/.checkfu/x"),
        access: MountAccess::ReadWrite,
    }])
    .unwrap();
    cases.push((reserved, unavailable(Requirement::Mounts)));
    let mut twice = base.clone();
    twice.mounts = Mounts::new(vec![
        MountSpec {
            path: path("/data"),
            access: MountAccess::ReadWrite,
        },
        MountSpec {
            path: path("/data"),
            access: MountAccess::ReadOnly,
        },
    ])
    .unwrap();
    cases.push((twice, unavailable(Requirement::Mounts)));
    for (request, expected) in cases {
        assert_eq!(refused(adapter.provision(request).await), expected);
    }
    let all = adapter.backend().list(&Default::default()).await.unwrap();
    assert!(all.is_empty(), "nothing was allocated: {all:?}");
}

#[tokio::test]
async fn provision_refuses_mounts_over_max_mounts_and_retention_not_offered() {
    let adapter = memory_with(|d| {
        d.max_mounts = MaxMounts::new(1).unwrap();
        d.retention_modes = vec![RetentionMode::Durable];
    });
    let over = request(adapter.capabilities(), &Spec::default());
    assert_eq!(
        refused(adapter.provision(over).await),
        unavailable(Requirement::Mounts)
    );
    let zdr = request(
        adapter.capabilities(),
        &Spec {
            mounts: vec![],
            ..Spec::zdr()
        },
    );
    assert_eq!(
        refused(adapter.provision(zdr).await),
        unavailable(Requirement::Retention)
    );
}

#[tokio::test]
async fn provision_maps_the_network_policy_onto_the_backend() {
    let adapter = memory();
    let (_, none) = provision(&adapter, &Spec::default()).await;
    let sandbox = sandbox_of(&adapter, &none.instance_id).await;
    let native = adapter.backend().native(&sandbox).await.unwrap();
    assert_eq!(native["network"], serde_json::json!({"mode": "none"}));
    let spec = Spec {
        network: Some(allowlist("api.example.com:443")),
        ..Spec::default()
    };
    let (_, listed) = provision(&adapter, &spec).await;
    let sandbox = sandbox_of(&adapter, &listed.instance_id).await;
    let native = adapter.backend().native(&sandbox).await.unwrap();
    assert_eq!(
        native["network"],
        serde_json::json!({
            "mode": "allowlist",
            "destinations": [{"host": "api.example.com", "port": 443}],
        })
    );
}

#[tokio::test]
async fn an_uncertified_allowlist_asks_the_backend_for_nothing() {
    // `local` enforces no network; its envelope says "filters nothing".
    let (adapter, _dir) = local();
    let spec = Spec {
        network: Some(allowlist("api.example.com:443")),
        ..Spec::default()
    };
    let (_, instance) = provision(&adapter, &spec).await;
    assert!(exists(&adapter, &instance.instance_id).await);
}

#[tokio::test]
async fn a_provision_whose_backend_dies_leaves_a_labelled_orphan_for_cleanup() {
    let inner = Arc::new(MemoryBackend::new());
    let faulty = Faulty::new(Arc::clone(&inner));
    let control = faulty.control();
    let adapter = ContractAdapter::new(Arc::new(faulty), envelopes::memory()).unwrap();
    // The backend dies at the first mutation after `create`: the adapter
    // cannot undo its allocation any more.
    control.arm(0);
    let request = request(adapter.capabilities(), &Spec::default());
    let err = refused(adapter.provision(request).await);
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::Provision, FailureReason::PlatformUnavailable)
    );
    // The sandbox survived the dead adapter; a restarted one finds it by its
    // labels and reclaims it.
    let leftover = inner.list(&Default::default()).await.unwrap();
    assert_eq!(leftover.len(), 1);
    let sweeper = ContractAdapter::new(inner, envelopes::memory()).unwrap();
    let swept = sweeper
        .cleanup(CleanupRequest::new(in_seconds(5), in_seconds(5), vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(swept.instances.len(), 1);
}

#[tokio::test]
async fn a_provision_failing_after_create_destroys_its_sandbox() {
    let inner = Arc::new(MemoryBackend::new());
    let faulty = Faulty::new(Arc::clone(&inner));
    let control = faulty.control();
    let adapter = ContractAdapter::new(Arc::new(faulty), envelopes::memory()).unwrap();
    // The first mutation after `create` (a mount directory) fails once.
    control.fail_once_after(0);
    let request = request(adapter.capabilities(), &Spec::default());
    let err = refused(adapter.provision(request).await);
    assert_eq!(
        err,
        SandboxError::operation_failed(Operation::Provision, FailureReason::PlatformUnavailable)
    );
    assert!(inner.list(&Default::default()).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_interrupted_provision_undoes_its_allocation() {
    // "You own every partial allocation until the handoff returns": a
    // provision dropped mid-way (the backend stopped answering after
    // `create`) destroys the sandbox it made.
    let inner = Arc::new(MemoryBackend::new());
    let faulty = Faulty::new(Arc::clone(&inner));
    let control = faulty.control();
    let adapter = ContractAdapter::new(Arc::new(faulty), envelopes::memory()).unwrap();
    control.stall();
    let request = request(adapter.capabilities(), &Spec::default());
    let interrupted = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        adapter.provision(request),
    )
    .await;
    assert!(interrupted.is_err(), "the provision was interrupted");
    let mut gone = false;
    for _ in 0..100 {
        if inner.list(&Default::default()).await.unwrap().is_empty() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(gone, "the interrupted allocation was destroyed");
}

#[tokio::test]
async fn a_none_profile_on_local_runs_without_network_where_the_host_allows_it() {
    use corral_backend_local::LocalBackend;
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(LocalBackend::open(dir.path()).unwrap());
    let capabilities = backend.capabilities();
    if !capabilities.enforces.network_none {
        println!("SKIP: this host cannot start commands in a new network namespace");
        return;
    }
    let adapter = ContractAdapter::new(backend, envelopes::local_for(&capabilities)).unwrap();
    let (request, instance) = active(&adapter, &Spec::default()).await;
    assert_eq!(request.profile.network, NetworkPolicy::None);
    let table = adapter
        .execute(shell(&instance, "cat /proc/net/dev"))
        .await
        .unwrap();
    let table = String::from_utf8(table.stdout.content.to_vec()).unwrap();
    let interfaces: Vec<&str> = table
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim()))
        .collect();
    assert_eq!(interfaces, ["lo"], "{table}");
}
