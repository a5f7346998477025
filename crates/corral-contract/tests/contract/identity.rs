//! "seventeen top-level fields across twenty-one equality checks".

use crate::common;
use common::*;
use corral_contract::*;

#[test]
fn there_are_twenty_one_checks_over_seventeen_top_level_fields() {
    assert_eq!(IdentityField::ALL.len(), 21);
    let top: std::collections::BTreeSet<&str> = IdentityField::ALL
        .iter()
        .map(|f| f.as_str().split('.').next().unwrap())
        .collect();
    assert_eq!(top.len(), 17);
    // Every top-level identity field is a field of the instance, and the
    // instance has exactly one more: instance_id.
    let json = serde_json::to_value(instance(InstanceState::Active)).unwrap();
    let keys: std::collections::BTreeSet<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = top.clone();
    expected.insert("instance_id");
    assert_eq!(keys, expected);
}

#[test]
fn a_correct_instance_has_no_mismatch() {
    let caps = full_caps();
    for state in InstanceState::ALL {
        let inst = instance(*state);
        assert!(identity_mismatches(&request(), &inst, &caps, *state).is_empty());
        check_instance_identity(&request(), &inst, &caps, *state).unwrap();
    }
}

#[test]
fn instance_id_is_not_an_identity_check() {
    let mut inst = instance(InstanceState::Active);
    inst.instance_id = InstanceId::new("another").unwrap();
    assert!(identity_mismatches(&request(), &inst, &full_caps(), InstanceState::Active).is_empty());
}

/// Corrupting each field produces exactly that field's mismatch.
#[test]
fn each_corruption_names_exactly_its_field() {
    use IdentityField as F;
    let caps = full_caps();
    let other_digest = Digest::new(D3).unwrap();
    let other_image = ImageReference::new(format!("alpine@{D3}")).unwrap();
    type Corrupt = Box<dyn Fn(&mut SandboxInstance)>;
    let corruptions: Vec<(F, Corrupt)> = vec![
        (
            F::Provider,
            Box::new(|i| i.provider = ProviderId::new("x").unwrap()),
        ),
        (F::Placement, Box::new(|i| i.placement = Placement::Hosted)),
        (
            F::State,
            Box::new(|i| i.state = InstanceState::Provisioning),
        ),
        (
            F::WorkspaceId,
            Box::new(|i| i.workspace_id = WorkspaceId::new("x").unwrap()),
        ),
        (
            F::SessionId,
            Box::new(|i| i.session_id = SessionId::new("x").unwrap()),
        ),
        (F::RunId, Box::new(|i| i.run_id = RunId::new("x").unwrap())),
        (
            F::AttemptId,
            Box::new(|i| i.attempt_id = AttemptId::new("x").unwrap()),
        ),
        (
            F::LeaseId,
            Box::new(|i| i.lease_id = LeaseId::new("x").unwrap()),
        ),
        (
            F::LeaseEpoch,
            Box::new(|i| i.lease_epoch = LeaseEpoch::new(4).unwrap()),
        ),
        (
            F::Target,
            Box::new(|i| i.target = TargetId::new("x").unwrap()),
        ),
        (
            F::Profile,
            Box::new(|i| i.profile.max_duration_seconds = DurationSeconds::new(1).unwrap()),
        ),
        (
            F::Platform,
            Box::new(|i| i.platform = Platform::LINUX_ARM64),
        ),
        (
            F::RootImage,
            Box::new({
                let img = other_image.clone();
                move |i| i.root_image = img.clone()
            }),
        ),
        (F::Mounts, Box::new(|i| i.mounts = Mounts::none())),
        (
            F::OutputPath,
            Box::new(|i| i.output_path = path("/mnt/session/output")),
        ),
        (
            F::ExpiresAt,
            Box::new(|i| i.expires_at = ts("2026-11-29T20:00:00.001Z")),
        ),
        (
            F::MaterializationProfileDigest,
            Box::new({
                let d = other_digest.clone();
                move |i| i.materialization.profile_digest = d.clone()
            }),
        ),
        (
            F::MaterializationImageReference,
            Box::new({
                let img = other_image.clone();
                move |i| i.materialization.image_reference = img.clone()
            }),
        ),
        (
            F::MaterializationImageDigest,
            Box::new({
                let d = other_digest.clone();
                move |i| i.materialization.image_digest = d.clone()
            }),
        ),
        (
            F::MaterializationProviderRevision,
            Box::new(|i| i.materialization.provider_revision = Revision::new("x").unwrap()),
        ),
        (
            F::MaterializationMaterializationRevision,
            Box::new(|i| i.materialization.materialization_revision = Revision::new("x").unwrap()),
        ),
    ];
    assert_eq!(corruptions.len(), 21);
    for (field, corrupt) in &corruptions {
        let mut inst = instance(InstanceState::Active);
        corrupt(&mut inst);
        let found = identity_mismatches(&request(), &inst, &caps, InstanceState::Active);
        assert_eq!(found.len(), 1, "{field}: {found:?}");
        assert_eq!(found[0].field, *field);
        assert_ne!(found[0].expected, found[0].actual);
        let err =
            check_instance_identity(&request(), &inst, &caps, InstanceState::Active).unwrap_err();
        match err {
            SandboxError::SandboxProtocolInvalid {
                operation,
                field: f,
                ..
            } => {
                assert_eq!(operation, Operation::InstanceIdentity);
                assert_eq!(f, field.as_str());
            }
            other => panic!("{other:?}"),
        }
    }
}

/// "`expires_at` must come back unchanged", and the message points at it.
#[test]
fn a_replaced_deadline_is_named_with_both_values() {
    let mut inst = instance(InstanceState::Provisioning);
    inst.expires_at = ts("2026-11-29T19:59:59.000Z");
    let err = check_instance_identity(&request(), &inst, &full_caps(), InstanceState::Provisioning)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SandboxProtocolInvalid: operation instance_identity: field expires_at: \
         expected \"2026-11-29T20:00:00.000Z\", actual \"2026-11-29T19:59:59.000Z\""
    );
}

/// `image_digest` is derived from `root_image`, and revisions come from the
/// provider's own envelope.
#[test]
fn materialization_is_derived_from_the_request_and_the_envelope() {
    let m = Materialization::expected(&request(), &full_caps());
    assert_eq!(m.image_digest.as_str(), D1);
    assert_eq!(m.image_reference, request().root_image);
    assert_eq!(m.profile_digest.as_str(), D2);
    assert_eq!(m.provider_revision.as_str(), "memory-1");
    assert_eq!(m.materialization_revision.as_str(), "mat-1");
    // Another provider's revisions are a mismatch.
    let inst = instance(InstanceState::Active);
    let found = identity_mismatches(
        &request(),
        &inst,
        &SandboxProviderCapabilities::minimum(),
        InstanceState::Active,
    );
    let fields: Vec<_> = found.iter().map(|m| m.field).collect();
    assert_eq!(
        fields,
        [
            IdentityField::MaterializationProviderRevision,
            IdentityField::MaterializationMaterializationRevision
        ]
    );
}
