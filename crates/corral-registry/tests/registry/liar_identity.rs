//! "Every returned instance is compared field by field against the request
//! the Runner sent — seventeen top-level fields across twenty-one equality
//! checks. All must be byte-exact, and a mismatch is a
//! `SandboxProtocolInvalid` naming the `instance_identity` operation."
//!
//! One test per check: the liar corrupts exactly that field of the
//! instance `provision` returns; the runtime must refuse it naming the
//! field and both values (as the JSON the check compares), run the
//! handoff's rollback exactly once, and leave no sandbox behind. `activate`
//! ("the same identity fields, now with `state: \"active\"`") is checked on
//! top.

use crate::liar;
use corral_contract::{
    Compensated, IdentityField, InstanceId, InstanceState, Operation, RetentionMode,
    SandboxInstance, SandboxProvider,
};
use liar::corrupt::{corrupt_instance, lied_instance_id};
use liar::fixtures::{
    assert_protocol_invalid, live_sandboxes, memory_liar, provision_request, refused, rendered,
    runtime,
};
use liar::lie::{InstanceIdLie, InstanceMember, Lie};

/// The JSON of the one value `field` checks.
fn field_json(instance: &SandboxInstance, field: IdentityField) -> String {
    use IdentityField as F;
    let m = &instance.materialization;
    match field {
        F::Provider => rendered(&instance.provider),
        F::Placement => rendered(&instance.placement),
        F::State => rendered(&instance.state),
        F::WorkspaceId => rendered(&instance.workspace_id),
        F::SessionId => rendered(&instance.session_id),
        F::RunId => rendered(&instance.run_id),
        F::AttemptId => rendered(&instance.attempt_id),
        F::LeaseId => rendered(&instance.lease_id),
        F::LeaseEpoch => rendered(&instance.lease_epoch),
        F::Target => rendered(&instance.target),
        F::Profile => rendered(&instance.profile),
        F::Platform => rendered(&instance.platform),
        F::RootImage => rendered(&instance.root_image),
        F::Mounts => rendered(&instance.mounts),
        F::OutputPath => rendered(&instance.output_path),
        F::ExpiresAt => rendered(&instance.expires_at),
        F::MaterializationProfileDigest => rendered(&m.profile_digest),
        F::MaterializationImageReference => rendered(&m.image_reference),
        F::MaterializationImageDigest => rendered(&m.image_digest),
        F::MaterializationProviderRevision => rendered(&m.provider_revision),
        F::MaterializationMaterializationRevision => rendered(&m.materialization_revision),
    }
}

/// `provision` returns an instance with `field` corrupted.
async fn provision_lies_about(field: IdentityField) {
    let liar = memory_liar().telling(Lie::Identity {
        member: InstanceMember::Provision,
        field,
    });
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);

    let error = refused(runtime.provision(request.clone()).await);

    let honest = SandboxInstance::for_request(
        InstanceId::new("any").expect("literal"),
        &request,
        runtime.capabilities(),
        InstanceState::Provisioning,
    );
    let mut lie = honest.clone();
    corrupt_instance(&mut lie, field);
    assert_ne!(field_json(&honest, field), field_json(&lie, field));
    assert_protocol_invalid(
        &error,
        Operation::InstanceIdentity,
        field.as_str(),
        &field_json(&honest, field),
        &field_json(&lie, field),
    );
    assert_eq!(ledger.handoffs(Compensated::Provision), 1);
    assert_eq!(
        ledger.rollbacks(Compensated::Provision),
        1,
        "a refused provision is rolled back exactly once"
    );
    assert_eq!(
        live_sandboxes(runtime.provider()).await,
        0,
        "the rollback undid the allocation"
    );
}

macro_rules! identity_tests {
    ($($name:ident => $field:ident,)+) => {
        $(
            #[tokio::test]
            async fn $name() {
                provision_lies_about(IdentityField::$field).await;
            }
        )+

        /// The fields the tests above corrupt, in the contract's order.
        const COVERED: &[IdentityField] = &[$(IdentityField::$field),+];
    };
}

identity_tests! {
    identity_rejects_foreign_provider => Provider,
    identity_rejects_other_placement => Placement,
    identity_rejects_wrong_state => State,
    identity_rejects_foreign_workspace_id => WorkspaceId,
    identity_rejects_foreign_session_id => SessionId,
    identity_rejects_foreign_run_id => RunId,
    identity_rejects_foreign_attempt_id => AttemptId,
    identity_rejects_foreign_lease_id => LeaseId,
    identity_rejects_other_lease_epoch => LeaseEpoch,
    identity_rejects_foreign_target => Target,
    identity_rejects_altered_profile => Profile,
    identity_rejects_other_platform => Platform,
    identity_rejects_other_root_image => RootImage,
    identity_rejects_altered_mounts => Mounts,
    identity_rejects_moved_output_path => OutputPath,
    identity_rejects_moved_expires_at => ExpiresAt,
    identity_rejects_wrong_materialization_profile_digest => MaterializationProfileDigest,
    identity_rejects_wrong_materialization_image_reference => MaterializationImageReference,
    identity_rejects_image_digest_not_derived_from_root_image => MaterializationImageDigest,
    identity_rejects_unadvertised_provider_revision => MaterializationProviderRevision,
    identity_rejects_unadvertised_materialization_revision => MaterializationMaterializationRevision,
}

/// "twenty-one equality checks": each has its own test above.
#[test]
fn identity_every_check_has_its_own_lie() {
    assert_eq!(COVERED, IdentityField::ALL);
}

/// `activate` returns an instance with `field` corrupted; provision was
/// honest and stays accepted.
async fn activate_lies_about(field: IdentityField) {
    let liar = memory_liar().telling(Lie::Identity {
        member: InstanceMember::Activate,
        field,
    });
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    let provisioned = runtime
        .provision(request.clone())
        .await
        .expect("an honest provision is accepted")
        .value;

    let error = refused(runtime.activate(provisioned.instance_id.clone()).await);

    let honest = SandboxInstance::for_request(
        provisioned.instance_id,
        &request,
        runtime.capabilities(),
        InstanceState::Active,
    );
    let mut lie = honest.clone();
    corrupt_instance(&mut lie, field);
    assert_protocol_invalid(
        &error,
        Operation::InstanceIdentity,
        field.as_str(),
        &field_json(&honest, field),
        &field_json(&lie, field),
    );
    assert_eq!(ledger.rollbacks(Compensated::Activate), 1);
    assert_eq!(
        ledger.rollbacks(Compensated::Provision),
        0,
        "the accepted provision is not unwound by a refused activate"
    );
}

/// The fields an `activate` answer is checked on again, and the sentence
/// that asks for each.
const ACTIVATE_LIES: &[(IdentityField, &str)] = &[
    (
        IdentityField::State,
        "`activate` … the same identity fields, now with `state: \"active\"`",
    ),
    (
        IdentityField::ExpiresAt,
        "`expires_at` must come back *unchanged*",
    ),
];

/// Each row of [`ACTIVATE_LIES`]: an activate that lies about the field
/// (answering `provisioning`, moving `expires_at`) is refused and rolled
/// back.
#[tokio::test]
async fn identity_rejects_an_activate_lying_about_each_rechecked_field() {
    for (field, _rule) in ACTIVATE_LIES {
        activate_lies_about(*field).await;
    }
}

/// corral: "`activate` returns the instance it was asked to activate" —
/// an answer naming another instance is refused, and rolled back.
#[tokio::test]
async fn identity_rejects_activate_answering_another_instance() {
    let liar = memory_liar().telling(Lie::InstanceId(InstanceIdLie::ActivateAnswersAnother));
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    let provisioned = runtime
        .provision(request)
        .await
        .expect("an honest provision is accepted")
        .value;

    let error = refused(runtime.activate(provisioned.instance_id.clone()).await);

    assert_protocol_invalid(
        &error,
        Operation::Activate,
        "instance_id",
        &rendered(&provisioned.instance_id),
        &rendered(&lied_instance_id(&provisioned.instance_id)),
    );
    assert_eq!(ledger.rollbacks(Compensated::Activate), 1);
}

/// corral: "an allocation never reuses the id of an instance that is still
/// live". The rollback undoes the new allocation — which it knows on its
/// own, not from the lying value — and the live instance survives.
#[tokio::test]
async fn identity_rejects_provision_reusing_a_live_instance_id() {
    let liar = memory_liar();
    let ledger = liar.ledger();
    let runtime = runtime(liar);
    let request = provision_request(runtime.capabilities(), RetentionMode::EphemeralZdr);
    let live = runtime
        .provision(request.clone())
        .await
        .expect("an honest provision is accepted")
        .value;
    runtime
        .provider()
        .tell(Lie::InstanceId(InstanceIdLie::ProvisionReusesLive));

    let error = refused(runtime.provision(request).await);

    assert_protocol_invalid(
        &error,
        Operation::Provision,
        "instance_id",
        "an id no live instance holds",
        &rendered(&live.instance_id),
    );
    assert_eq!(ledger.rollbacks(Compensated::Provision), 1);
    assert_eq!(
        live_sandboxes(runtime.provider()).await,
        1,
        "the rollback undid the new allocation, not the live instance"
    );
}
