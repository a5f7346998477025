//! `Narrow<P>`: a provider behind a narrower envelope behaves as the
//! contract's "minimum provider" says a provider with that envelope must —
//! "fail closed: readFile → SandboxCapabilityUnavailable
//! {physically_contained_file_read} … stub: snapshot, cloneSnapshot, resume —
//! unreachable while snapshots: false … omit: readFiles, listDir,
//! listProjectDir, openProcess", release "always destroyed", `max_mounts: 0`.

use crate::common_runtime;
use common_runtime::*;
use corral_contract::*;
use corral_runtime::narrow::{Narrow, minimum_of};
use corral_runtime::runtime::Runtime;

fn minimum() -> Narrow<Fake> {
    Narrow::minimum(Fake::new(full_caps())).unwrap()
}

/// A ZDR, `none` request with no mounts: what the minimum provider serves.
fn bare_request() -> SandboxProvisionRequest {
    request_for(
        profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
        Mounts::none(),
    )
}

fn wider(narrow: CapabilityDeclaration, field: &str) {
    let Err(err) = Narrow::new(Fake::new(full_caps_for_narrowing()), caps(narrow)) else {
        panic!("a wider envelope on {field} was accepted");
    };
    protocol_invalid(&err, Operation::Capabilities, field);
}

/// The inner envelope the widening tests narrow: everything but a few
/// claims, so each can be overclaimed.
fn full_caps_for_narrowing() -> SandboxProviderCapabilities {
    let mut declaration = full_declaration();
    declaration.egress_certification = EgressCertification::AdvisoryFilter;
    declaration.enforcement.memory_limit = EnforcementLevel::BestEffort;
    declaration.snapshot_custody = SnapshotCustody::Runner;
    declaration.open_process = false;
    caps(declaration)
}

#[test]
fn narrow_refuses_an_envelope_wider_than_the_inner_one_naming_the_field() {
    let base = || full_caps_for_narrowing().into_declaration();
    type Widen = fn(&mut CapabilityDeclaration);
    let cases: Vec<(&str, Widen)> = vec![
        ("placement", |d| d.placement = Placement::Hosted),
        ("tiers", |d| d.tiers = vec![Tier::Microvm]),
        ("platforms", |d| d.platforms = vec![Platform::LINUX_ARM64]),
        ("package_managers", |d| {
            d.package_managers = vec![PackageManager::Npm]
        }),
        ("snapshot_custody", |d| {
            d.snapshot_custody = SnapshotCustody::Provider
        }),
        ("open_process", |d| d.open_process = true),
        ("egress_certification", |d| {
            d.egress_certification = EgressCertification::KernelEnforced
        }),
        ("enforcement.memory_limit", |d| {
            d.enforcement.memory_limit = EnforcementLevel::ProviderEnforced
        }),
        ("max_mounts", |d| d.max_mounts = MaxMounts::new(9).unwrap()),
        ("provider_revision", |d| {
            d.provider_revision = Revision::new("fake-2").unwrap()
        }),
        ("materialization_revision", |d| {
            d.materialization_revision = Revision::new("m-2").unwrap()
        }),
    ];
    for (field, widen) in cases {
        let mut narrow = base();
        widen(&mut narrow);
        wider(narrow, field);
    }
}

#[test]
fn narrow_refuses_an_image_mode_the_inner_provider_cannot_materialize() {
    let host = caps(CapabilityDeclaration {
        image_mode: ImageMode::Host,
        ..full_declaration()
    });
    let err = Narrow::new(Fake::new(host), full_caps()).err().unwrap();
    protocol_invalid(&err, Operation::Capabilities, "image_mode");
    // Claiming `host` over a materializing provider claims less: accepted.
    let narrow = caps(CapabilityDeclaration {
        image_mode: ImageMode::Host,
        ..full_declaration()
    });
    Narrow::new(Fake::new(full_caps()), narrow).unwrap();
}

#[test]
fn narrow_minimum_keeps_the_inner_identity_and_drops_every_optional_capability() {
    let inner = full_caps();
    let min = minimum_of(&inner).unwrap();
    let expected = CapabilityDeclaration {
        package_managers: vec![],
        network_modes: vec![NetworkMode::None],
        retention_modes: vec![RetentionMode::EphemeralZdr],
        snapshots: false,
        snapshot_custody: SnapshotCustody::Runner,
        snapshot_clone: false,
        list_dir: false,
        list_project_dir: false,
        read_files: false,
        physically_contained_file_read: false,
        active_mount_write: false,
        open_process: false,
        egress_certification: EgressCertification::Unsupported,
        max_mounts: MaxMounts::MIN,
        ..inner.declaration().clone()
    };
    assert_eq!(min.declaration(), &expected);
    // It earns the minimum provider's tokens: six skips of nine.
    let skips = min
        .conformance_plan()
        .iter()
        .filter(|(_, missing)| !missing.is_empty())
        .count();
    assert_eq!(skips, 6);
}

#[test]
fn narrow_minimum_is_refused_over_a_provider_that_cannot_enforce_none() {
    let allowlist_only = caps(CapabilityDeclaration {
        network_modes: vec![NetworkMode::Allowlist],
        ..full_declaration()
    });
    let err = Narrow::minimum(Fake::new(allowlist_only)).err().unwrap();
    assert_eq!(
        err,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::NetworkPolicy,
            capability: Some(CapabilityField::NetworkModes),
        }
    );
}

#[tokio::test]
async fn narrow_read_file_fails_closed_without_calling_the_inner_provider() {
    let narrow = minimum();
    let request = ReadFileRequest::new(
        id("inst-1"),
        path("/mnt/session/outputs/a"),
        path("/mnt/session/outputs"),
        MaximumBytes::new(1).unwrap(),
    )
    .unwrap();
    assert_eq!(
        narrow.read_file(request).await.unwrap_err(),
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
    assert_eq!(narrow.inner().log.calls(Operation::ReadFile), 0);
}

/// One member a minimum provider omits, called, and its refusal.
type Omitted<'a> = (
    Operation,
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), SandboxError>> + 'a>>,
    SandboxError,
);

#[tokio::test]
async fn narrow_optional_members_are_absent_with_their_typed_refusals() {
    let narrow = minimum();
    let out = path("/mnt/session/outputs");
    let id = id("inst-1");
    let conflict = |operation, actual| {
        SandboxError::lifecycle_conflict(operation, &[InstanceState::Active], actual)
    };
    let batch = ReadFilesRequest::new(id.clone(), out.clone(), vec![]).unwrap();
    let list = ListDirRequest {
        instance_id: id.clone(),
        root: out.clone(),
        max_entries: MaxEntries::MAX,
    };
    let project = ListProjectDirRequest {
        instance_id: id.clone(),
        root: out,
        max_entries: MaxEntries::MAX,
    };
    let process = OpenProcessRequest {
        instance_id: id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new("agent").unwrap(),
            arguments: Arguments::default(),
            working_directory: None,
            environment: Environment::new(),
        },
    };
    let write = ActiveWriteRequest {
        instance_id: id,
        batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
            path: path("/workspace/app/a"),
            content: FileContent::new(b"x".to_vec()).unwrap(),
            mode: FileMode::DEFAULT,
        }])
        .unwrap(),
    };
    let omitted: Vec<Omitted<'_>> = vec![
        (
            Operation::ReadFiles,
            Box::pin(async { narrow.read_files(batch).await.map(drop) }),
            conflict(Operation::ReadFiles, ConflictState::ReadFilesUnsupported),
        ),
        (
            Operation::ListDir,
            Box::pin(async { narrow.list_dir(list).await.map(drop) }),
            conflict(Operation::ListDir, ConflictState::ListDirUnsupported),
        ),
        (
            Operation::ListProjectDir,
            Box::pin(async { narrow.list_project_dir(project).await.map(drop) }),
            conflict(
                Operation::ListProjectDir,
                ConflictState::ListProjectDirUnsupported,
            ),
        ),
        (
            Operation::OpenProcess,
            Box::pin(async { narrow.open_process(process).await.map(drop) }),
            conflict(
                Operation::OpenProcess,
                ConflictState::OpenProcessUnsupported,
            ),
        ),
        (
            Operation::BeginActiveWrite,
            Box::pin(async { narrow.begin_active_write(write).await.map(drop) }),
            Operation::BeginActiveWrite.absent_refusal().unwrap(),
        ),
    ];
    for (operation, call, refusal) in omitted {
        assert_eq!(call.await.unwrap_err(), refusal, "{operation:?}");
    }
    assert_eq!(narrow.inner().log.all_calls(), Vec::<Operation>::new());
}

#[tokio::test]
async fn narrow_snapshot_clone_and_resume_refuse_snapshots_without_calling_the_inner_provider() {
    let narrow = minimum();
    let snapshots = SandboxError::capability_unavailable(Requirement::Snapshots);
    let snapshot = narrow
        .snapshot(SnapshotRequest {
            instance_id: id("inst-1"),
            expires_at: ts("2026-12-29T00:00:00.000Z"),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(snapshot, snapshots);
    let source = SnapshotRef {
        snapshot_id: SnapshotId::new("snap-1").unwrap(),
        provider: ProviderId::new("fake").unwrap(),
        placement: Placement::Local,
        source_instance_id: id("inst-1"),
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        profile_id: ProfileId::new("prof-1").unwrap(),
        profile_version: ProfileVersion::new("7").unwrap(),
        profile_digest: Digest::new(D2).unwrap(),
        expires_at: ts("2026-12-29T00:00:00.000Z"),
        created_at: ts("2026-11-29T19:30:00.000Z"),
    };
    let clone = narrow
        .clone_snapshot(CloneSnapshotRequest {
            source: source.clone(),
            target_session_id: SessionId::new("ses-2").unwrap(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(clone, snapshots);
    let resume = narrow
        .resume(ResumeRequest {
            request: bare_request(),
            snapshot: source,
        })
        .await
        .err()
        .unwrap();
    assert_eq!(resume, snapshots);
    assert_eq!(narrow.inner().log.all_calls(), Vec::<Operation>::new());
}

#[tokio::test]
async fn narrow_without_snapshot_clone_refuses_a_clone_naming_the_capability() {
    let no_clone = caps(CapabilityDeclaration {
        snapshot_clone: false,
        ..full_declaration()
    });
    let narrow = Narrow::new(Fake::new(full_caps()), no_clone).unwrap();
    let source = SnapshotRef {
        snapshot_id: SnapshotId::new("snap-1").unwrap(),
        provider: ProviderId::new("fake").unwrap(),
        placement: Placement::Local,
        source_instance_id: id("inst-1"),
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        profile_id: ProfileId::new("prof-1").unwrap(),
        profile_version: ProfileVersion::new("7").unwrap(),
        profile_digest: Digest::new(D2).unwrap(),
        expires_at: ts("2026-12-29T00:00:00.000Z"),
        created_at: ts("2026-11-29T19:30:00.000Z"),
    };
    let err = narrow
        .clone_snapshot(CloneSnapshotRequest {
            source,
            target_session_id: SessionId::new("ses-2").unwrap(),
        })
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::SandboxCapabilityUnavailable {
            requirement: Requirement::Snapshots,
            capability: Some(CapabilityField::SnapshotClone),
        }
    );
    assert_eq!(narrow.inner().log.calls(Operation::CloneSnapshot), 0);
}

#[tokio::test]
async fn narrow_provisions_over_max_mounts_are_refused_without_calling_the_inner_provider() {
    let narrow = minimum();
    let err = narrow.provision(zdr_request()).await.err().unwrap();
    assert_eq!(
        err,
        SandboxError::capability_unavailable(Requirement::Mounts)
    );
    let err = narrow
        .provision(request_for(
            profile(RetentionMode::Durable, NetworkPolicy::None),
            Mounts::none(),
        ))
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::capability_unavailable(Requirement::Retention)
    );
    let err = narrow
        .provision(request_for(
            profile(RetentionMode::EphemeralZdr, allowlist()),
            Mounts::none(),
        ))
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        SandboxError::capability_unavailable(Requirement::NetworkPolicy)
    );
    assert_eq!(narrow.inner().log.calls(Operation::Provision), 0);
}

#[tokio::test]
async fn the_minimum_provider_behind_the_runtime_runs_a_one_shot_and_releases_destroyed() {
    let rt = Runtime::new(minimum()).unwrap();
    assert_eq!(rt.capabilities(), &minimum_of(&full_caps()).unwrap());
    let instance = rt.provision(bare_request()).await.unwrap().value;
    let id = instance.instance_id;
    rt.write_file(WriteFileRequest {
        instance_id: id.clone(),
        path: path("/mnt/session/outputs/prompt.txt"),
        content: FileContent::new(b"hi".to_vec()).unwrap(),
        mode: FileMode::DEFAULT,
    })
    .await
    .unwrap();
    rt.activate(id.clone()).await.unwrap();
    rt.execute(ExecuteRequest {
        instance_id: id.clone(),
        command: command(30, 1024),
    })
    .await
    .unwrap();
    let read = rt
        .read_path(
            id.clone(),
            path("/mnt/session/outputs/prompt.txt"),
            MaximumBytes::new(16).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        read,
        SandboxError::capability_unavailable(Requirement::PhysicallyContainedFileRead)
    );
    let released = rt
        .release(ReleaseRequest {
            instance_id: id,
            snapshot_expires_at: None,
        })
        .await
        .unwrap()
        .value;
    assert!(matches!(released, ReleaseDisposition::Destroyed));
    let inner = rt.provider().inner();
    assert_eq!(inner.log.calls(Operation::ReadFile), 0);
    assert_eq!(inner.log.all_rollbacks(), 0);
}
