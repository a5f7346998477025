//! `provision`: allocate a sandbox for the request, prepare the declared
//! mounts and the output tree, record the instance, hand it off in
//! `provisioning`.
//!
//! Admission against the envelope happens before anything is allocated, in
//! the order the refusals are listed: a platform the envelope does not list
//! (`platform`), a retention mode it does not list (`retention`), a network
//! mode it does not list (`network_policy`), any package (`packages`: the
//! adapter materializes none), a resource ceiling the backend cannot enforce
//! (`resources`), a mount plan over `max_mounts`, on a reserved root or with
//! a path twice (`mounts`). The network policy becomes the backend's
//! network: `none` → `Network::None`; an allowlist → `Network::Allowlist`
//! when the envelope certifies egress, and no restriction when it does not
//! (the envelope then says "filters nothing", and selection never routes an
//! allowlist profile to it). A backend that still refuses with
//! `unsupported` is mapped to the requirement naming the refused part.
//!
//! The instance id is fresh (`ci-` and 128 random bits); it is the sandbox's
//! get-or-create key and a label, so the instance is found again by key. The
//! rollback destroys exactly the sandbox `create` returned.

use corral_backend::{Backend, CreateRequest, Destination, Limits, Network, Size};
use corral_contract::SandboxPath;
use corral_contract::{
    Compensated, EgressCertification, FailureReason, Handoff, InstanceId, InstanceState,
    NetworkPolicy, Operation, Requirement, SandboxError, SandboxInstance, SandboxProvisionRequest,
    check_mount_plan,
};

use super::ContractAdapter;
use super::errors::{Subject, failed, from_backend};
use super::record::{InstanceRecord, instance_key, instance_labels};
use super::rollback::{DestroySandbox, Owned};

/// `<prefix>-` and 32 lowercase hex digits (128 bits) from the kernel's
/// random source.
pub(super) fn random_id(operation: Operation, prefix: &str) -> Result<String, SandboxError> {
    let bytes = corral_backend::statefile::random_bytes::<16>()
        .map_err(|_| failed(operation, FailureReason::PlatformUnavailable))?;
    Ok(format!("{prefix}-{}", hex::encode(bytes)))
}

/// A fresh instance id, `ci-<32 hex>`.
pub(super) fn new_instance_id(operation: Operation) -> Result<InstanceId, SandboxError> {
    InstanceId::new(random_id(operation, "ci")?)
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))
}

fn refuse(requirement: Requirement) -> SandboxError {
    SandboxError::capability_unavailable(requirement)
}

/// The backend's network for a profile's policy under this envelope.
fn network_for<B: Backend>(
    adapter: &ContractAdapter<B>,
    policy: &NetworkPolicy,
) -> Result<Network, SandboxError> {
    if !adapter.envelope.network_modes.contains(&policy.mode()) {
        return Err(refuse(Requirement::NetworkPolicy));
    }
    match policy {
        NetworkPolicy::None => Ok(Network::None),
        NetworkPolicy::Allowlist { .. }
            if adapter.envelope.egress_certification == EgressCertification::Unsupported =>
        {
            Ok(Network::Default)
        }
        NetworkPolicy::Allowlist { destinations } => {
            let mut out = Vec::new();
            for d in destinations.as_slice() {
                let (host, port) = d
                    .as_str()
                    .rsplit_once(':')
                    .ok_or_else(|| refuse(Requirement::NetworkPolicy))?;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let port = port
                    .parse::<u16>()
                    .map_err(|_| refuse(Requirement::NetworkPolicy))?;
                out.push(
                    Destination::new(host, port).map_err(|_| refuse(Requirement::NetworkPolicy))?,
                );
            }
            Ok(Network::Allowlist { destinations: out })
        }
    }
}

/// Admits `request` against the envelope and the backend and builds the
/// backend's create request for instance `instance_id` (shared with
/// `resume`, which adds the snapshot).
pub(super) fn admit<B: Backend>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    instance_id: &InstanceId,
    request: &SandboxProvisionRequest,
) -> Result<CreateRequest, SandboxError> {
    let envelope = &adapter.envelope;
    if !envelope.platforms.contains(&request.platform) {
        return Err(refuse(Requirement::Platform));
    }
    if !envelope
        .retention_modes
        .contains(&request.profile.retention)
    {
        return Err(refuse(Requirement::Retention));
    }
    let network = network_for(adapter, &request.profile.network)?;
    if !request.profile.packages.is_empty() {
        return Err(refuse(Requirement::Packages));
    }
    let r = &request.profile.resources;
    let enforces = adapter.backend.capabilities().enforces;
    let unenforceable = (r.cpu_millicores.is_some() && !enforces.cpu)
        || (r.memory_bytes.is_some() && !enforces.memory)
        || (r.disk_bytes.is_some() && !enforces.disk)
        || (r.max_processes.is_some() && !enforces.pids);
    if unenforceable {
        return Err(refuse(Requirement::Resources));
    }
    check_mount_plan(&request.mounts, envelope).map_err(|refusal| refusal.into_error())?;
    let labels = instance_labels(instance_id, request)
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))?;
    let key = instance_key(instance_id)
        .map_err(|_| failed(operation, FailureReason::PlatformRejected))?;
    Ok(CreateRequest {
        size: Size {
            cpus: r.cpu_millicores.map(|m| m.get() as f64 / 1000.0),
            memory_bytes: r.memory_bytes.map(|m| m.get()),
            disk_bytes: r.disk_bytes.map(|d| d.get()),
        },
        network,
        limits: Limits {
            pids: r.max_processes.map(|p| p.get()),
        },
        labels,
        key: Some(key),
        image: match envelope.image_mode {
            corral_contract::ImageMode::Profile => Some(request.root_image.to_string()),
            corral_contract::ImageMode::Host => None,
        },
        ..CreateRequest::default()
    })
}

/// The requirement a backend's `unsupported` answer to `create` refused.
pub(super) fn create_refusal<B: Backend>(
    adapter: &ContractAdapter<B>,
    create: &CreateRequest,
) -> SandboxError {
    let caps = adapter.backend.capabilities();
    let requirement = if create.snapshot.is_some() && !caps.snapshot {
        Requirement::Snapshots
    } else if create.image.is_some() {
        Requirement::BaseImage
    } else if create.network != Network::Default {
        Requirement::NetworkPolicy
    } else {
        Requirement::Resources
    };
    refuse(requirement)
}

/// Creates the instance's sandbox, makes its mount directories and output
/// tree, and writes its record. On any failure after `create` the sandbox
/// is destroyed before the error is returned. `source` is what a `not_found`
/// from `create` is about (the snapshot a resume restores).
pub(super) async fn allocate<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    operation: Operation,
    create: CreateRequest,
    record: &InstanceRecord,
    source: Subject<'_>,
) -> Result<(String, Owned<B>), SandboxError> {
    let subject = Subject::Instance(&record.instance_id);
    let info = match adapter.backend.create(create.clone()).await {
        Ok(info) => info,
        Err(e) if e.code() == corral_backend::ErrorCode::Unsupported => {
            return Err(create_refusal(adapter, &create));
        }
        Err(e) => return Err(from_backend(operation, source, &e)),
    };
    let owned = Owned::sandbox(&adapter.backend, &info.id);
    let files = adapter.backend.files();
    let dirs = record
        .request
        .mounts
        .as_slice()
        .iter()
        .map(|m| m.path.clone())
        .chain([SandboxPath::output_path()]);
    for dir in dirs {
        if let Err(e) = files.mkdir(&info.id, &dir, true).await {
            owned.abandon().await;
            return Err(from_backend(operation, subject, &e));
        }
    }
    if let Err(e) = adapter.save_record(operation, &info.id, record).await {
        owned.abandon().await;
        return Err(e);
    }
    Ok((info.id, owned))
}

pub(super) async fn run<B: Backend + 'static>(
    adapter: &ContractAdapter<B>,
    request: SandboxProvisionRequest,
) -> Result<Handoff<SandboxInstance>, SandboxError> {
    let op = Operation::Provision;
    let instance_id = new_instance_id(op)?;
    let create = admit(adapter, op, &instance_id, &request)?;
    let record = InstanceRecord {
        instance_id,
        request,
        state: InstanceState::Provisioning,
        sealed: false,
    };
    let source = Subject::Instance(&record.instance_id);
    let (sandbox_id, owned) = allocate(adapter, op, create, &record, source).await?;
    owned.hand_off();
    let instance = adapter.instance_of(&record);
    Ok(Handoff::new(
        instance,
        DestroySandbox {
            backend: adapter.backend.clone(),
            sandbox_id,
            operation: Compensated::Provision,
        },
    ))
}
