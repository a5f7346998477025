//! "Identity is cross-checked, not trusted": every returned instance, every
//! snapshot, clone and resume, field by field. A mismatch names the
//! operation, the offending field and both values — and the allocation that
//! failed is rolled back.

use crate::common_runtime;
use std::sync::Arc;

use common_runtime::*;
use corral_contract::*;

type Lie = fn(&mut SandboxInstance);
type SnapshotLie = fn(&mut SnapshotRef);
type RequestLie = fn(&mut SandboxProvisionRequest);

/// One lie per identity check: the field it breaks.
fn identity_lies() -> Vec<(&'static str, Lie)> {
    vec![
        ("provider", |i| {
            i.provider = ProviderId::new("other").unwrap()
        }),
        ("placement", |i| i.placement = Placement::Hosted),
        ("state", |i| i.state = InstanceState::Active),
        ("workspace_id", |i| {
            i.workspace_id = WorkspaceId::new("ws-2").unwrap()
        }),
        ("session_id", |i| {
            i.session_id = SessionId::new("ses-2").unwrap()
        }),
        ("run_id", |i| i.run_id = RunId::new("run-2").unwrap()),
        ("attempt_id", |i| {
            i.attempt_id = AttemptId::new("att-2").unwrap()
        }),
        ("lease_id", |i| {
            i.lease_id = LeaseId::new("lease-2").unwrap()
        }),
        ("lease_epoch", |i| {
            i.lease_epoch = LeaseEpoch::new(4).unwrap()
        }),
        ("target", |i| i.target = TargetId::new("acp").unwrap()),
        ("profile", |i| {
            i.profile.max_duration_seconds = DurationSeconds::new(1).unwrap()
        }),
        ("platform", |i| i.platform = Platform::LINUX_ARM64),
        ("root_image", |i| {
            i.root_image = ImageReference::new(format!("docker.io/library/debian@{D1}")).unwrap()
        }),
        ("mounts", |i| i.mounts = Mounts::none()),
        ("output_path", |i| i.output_path = path("/mnt/session/out")),
        ("expires_at", |i| {
            i.expires_at = ts("2026-11-29T20:05:00.000Z")
        }),
        ("materialization.profile_digest", |i| {
            i.materialization.profile_digest = Digest::new(D1).unwrap()
        }),
        ("materialization.image_reference", |i| {
            i.materialization.image_reference =
                ImageReference::new(format!("docker.io/library/alpine@{D1}")).unwrap()
        }),
        ("materialization.image_digest", |i| {
            i.materialization.image_digest = Digest::new(D2).unwrap()
        }),
        ("materialization.provider_revision", |i| {
            i.materialization.provider_revision = Revision::new("fake-0").unwrap()
        }),
        ("materialization.materialization_revision", |i| {
            i.materialization.materialization_revision = Revision::new("m-0").unwrap()
        }),
    ]
}

#[tokio::test]
async fn provision_identity_mismatch_on_each_of_the_21_checks_is_refused_naming_the_field() {
    let lies = identity_lies();
    assert_eq!(lies.len(), 21);
    for (field, lie) in lies {
        let rt = runtime(Fake::new(full_caps()));
        rt.provider().tamper_instance(move |_, i| lie(i));
        let err = rt.provision(zdr_request()).await.unwrap_err();
        let (expected, actual) = protocol_invalid(&err, Operation::InstanceIdentity, field);
        assert_ne!(expected, actual, "{field}");
        assert_eq!(
            rt.provider().log.rollbacks(Compensated::Provision),
            1,
            "{field}"
        );
        assert_eq!(
            rt.provider()
                .log
                .rollbacks_completed(Compensated::Provision),
            1
        );
    }
}

#[tokio::test]
async fn identity_error_carries_both_values_of_the_offending_field() {
    let rt = runtime(Fake::new(full_caps()));
    rt.provider().tamper_instance(|_, i| {
        i.expires_at = ts("2026-11-29T23:59:59.999Z");
    });
    let err = rt.provision(zdr_request()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "SandboxProtocolInvalid: operation instance_identity: field expires_at: \
         expected \"2026-11-29T20:00:00.000Z\", actual \"2026-11-29T23:59:59.999Z\""
    );
}

#[tokio::test]
async fn a_refused_instance_is_not_tracked_and_its_allocation_is_undone() {
    let rt = runtime(Fake::new(full_caps()));
    rt.provider()
        .tamper_instance(|_, i| i.lease_epoch = LeaseEpoch::new(9).unwrap());
    rt.provision(zdr_request()).await.unwrap_err();
    let allocated = id("inst-1");
    assert!(!rt.provider().has_instance(&allocated));
    assert_eq!(
        rt.instance_status(&allocated),
        corral_runtime::runtime::InstanceStatus::Unknown
    );
}

#[tokio::test]
async fn activate_identity_is_checked_with_state_active() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    rt.provider().tamper_instance(|op, i| {
        if op == Operation::Activate {
            i.state = InstanceState::Provisioning;
        }
    });
    let err = rt.activate(id.clone()).await.unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::InstanceIdentity, "state");
    assert_eq!(
        (expected.as_str(), actual.as_str()),
        ("\"active\"", "\"provisioning\"")
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Activate), 1);
    assert_eq!(
        rt.instance_status(&id),
        corral_runtime::runtime::InstanceStatus::Live(InstanceState::Provisioning)
    );
}

#[tokio::test]
async fn activate_must_return_the_instance_it_was_asked_to_activate() {
    let rt = runtime(Fake::new(full_caps()));
    let id = provisioned(&rt, zdr_request()).await;
    rt.provider().tamper_instance(|op, i| {
        if op == Operation::Activate {
            i.instance_id = InstanceId::new("inst-other").unwrap();
        }
    });
    let err = rt.activate(id).await.unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::Activate, "instance_id");
    assert_eq!(
        (expected.as_str(), actual.as_str()),
        ("\"inst-1\"", "\"inst-other\"")
    );
    assert_eq!(rt.provider().log.rollbacks(Compensated::Activate), 1);
}

#[tokio::test]
async fn an_allocation_reusing_a_live_instance_id_is_refused() {
    let rt = runtime(Fake::new(full_caps()));
    let first = provisioned(&rt, zdr_request()).await;
    let reused = first.clone();
    rt.provider()
        .tamper_instance(move |_, i| i.instance_id = reused.clone());
    let err = rt.provision(zdr_request()).await.unwrap_err();
    protocol_invalid(&err, Operation::Provision, "instance_id");
    assert_eq!(rt.provider().log.rollbacks(Compensated::Provision), 1);
}

async fn durable_snapshot(
    rt: &corral_runtime::runtime::Runtime<Fake>,
) -> (InstanceId, SnapshotRef) {
    let id = active(rt, durable_request()).await;
    let snapshot = rt
        .snapshot(SnapshotRequest {
            instance_id: id.clone(),
            expires_at: ts("2026-12-29T00:00:00.000Z"),
        })
        .await
        .unwrap()
        .value;
    (id, snapshot)
}

#[tokio::test]
async fn snapshot_disagreeing_with_its_source_on_each_field_is_refused_and_rolled_back() {
    let lies: Vec<(&str, SnapshotLie)> = vec![
        ("provider", |s| {
            s.provider = ProviderId::new("other").unwrap()
        }),
        ("placement", |s| s.placement = Placement::SelfHosted),
        ("source_instance_id", |s| {
            s.source_instance_id = InstanceId::new("inst-9").unwrap()
        }),
        ("workspace_id", |s| {
            s.workspace_id = WorkspaceId::new("ws-9").unwrap()
        }),
        ("session_id", |s| {
            s.session_id = SessionId::new("ses-9").unwrap()
        }),
        ("profile_id", |s| {
            s.profile_id = ProfileId::new("prof-9").unwrap()
        }),
        ("profile_version", |s| {
            s.profile_version = ProfileVersion::new("9").unwrap()
        }),
        ("profile_digest", |s| {
            s.profile_digest = Digest::new(D1).unwrap()
        }),
        // "substituting your own deadline is a protocol failure"
        ("expires_at", |s| {
            s.expires_at = ts("2026-12-30T00:00:00.000Z")
        }),
    ];
    for (field, lie) in lies {
        let rt = runtime(Fake::new(full_caps()));
        let id = active(&rt, durable_request()).await;
        rt.provider().knobs(|k| k.snapshot = Some(Arc::new(lie)));
        let err = rt
            .snapshot(SnapshotRequest {
                instance_id: id,
                expires_at: ts("2026-12-29T00:00:00.000Z"),
            })
            .await
            .err()
            .unwrap();
        protocol_invalid(&err, Operation::Snapshot, field);
        assert_eq!(
            rt.provider().log.rollbacks(Compensated::Snapshot),
            1,
            "{field}"
        );
    }
}

fn clone_request(source: SnapshotRef) -> CloneSnapshotRequest {
    CloneSnapshotRequest {
        source,
        target_session_id: SessionId::new("ses-fork").unwrap(),
    }
}

#[tokio::test]
async fn clone_must_use_a_new_id_the_target_session_the_same_expiry_and_a_valid_created_at() {
    let lies: Vec<(&str, SnapshotLie)> = vec![
        ("snapshot_id", |s| {
            s.snapshot_id = SnapshotId::new("snap-2").unwrap()
        }),
        ("session_id", |s| {
            s.session_id = SessionId::new("ses-1").unwrap()
        }),
        ("expires_at", |s| {
            s.expires_at = ts("2027-01-01T00:00:00.000Z")
        }),
        ("created_at", |s| {
            s.created_at = ts("2026-11-29T19:29:59.999Z")
        }),
        ("workspace_id", |s| {
            s.workspace_id = WorkspaceId::new("ws-9").unwrap()
        }),
    ];
    for (field, lie) in lies {
        let rt = runtime(Fake::new(full_caps()));
        let (_, source) = durable_snapshot(&rt).await;
        assert_eq!(source.snapshot_id.as_str(), "snap-2");
        rt.provider().knobs(|k| k.snapshot = Some(Arc::new(lie)));
        let err = rt
            .clone_snapshot(clone_request(source))
            .await
            .err()
            .unwrap();
        protocol_invalid(&err, Operation::CloneSnapshot, field);
        assert_eq!(
            rt.provider().log.rollbacks(Compensated::CloneSnapshot),
            1,
            "{field}"
        );
    }
}

#[tokio::test]
async fn a_clone_created_at_its_own_expiry_is_refused() {
    let rt = runtime(Fake::new(full_caps()));
    let (_, mut source) = durable_snapshot(&rt).await;
    // A source captured exactly at its expiry yields a clone that is not
    // "strictly before its own expiry".
    source.created_at = source.expires_at;
    let err = rt
        .clone_snapshot(clone_request(source))
        .await
        .err()
        .unwrap();
    let (expected, _) = protocol_invalid(&err, Operation::CloneSnapshot, "created_at");
    assert!(expected.starts_with("strictly before"), "{expected}");
    assert_eq!(rt.provider().log.rollbacks(Compensated::CloneSnapshot), 1);
}

#[tokio::test]
async fn an_honest_clone_is_accepted() {
    let rt = runtime(Fake::new(full_caps()));
    let (_, source) = durable_snapshot(&rt).await;
    let clone = rt
        .clone_snapshot(clone_request(source.clone()))
        .await
        .unwrap()
        .value;
    assert_ne!(clone.snapshot_id, source.snapshot_id);
    assert_eq!(clone.session_id.as_str(), "ses-fork");
    assert_eq!(clone.expires_at, source.expires_at);
    assert_eq!(rt.provider().log.all_rollbacks(), 0);
}

#[tokio::test]
async fn resume_request_disagreeing_with_its_snapshot_is_refused_before_calling_provider() {
    let lies: Vec<(&str, RequestLie)> = vec![
        ("provider", |r| {
            r.provider = ProviderId::new("other").unwrap()
        }),
        ("placement", |r| r.placement = Placement::Hosted),
        ("workspace_id", |r| {
            r.workspace_id = WorkspaceId::new("ws-9").unwrap()
        }),
        ("session_id", |r| {
            r.session_id = SessionId::new("ses-9").unwrap()
        }),
        ("profile_id", |r| {
            r.profile.id = ProfileId::new("prof-9").unwrap()
        }),
        ("profile_version", |r| {
            r.profile.version = ProfileVersion::new("9").unwrap()
        }),
        ("profile_digest", |r| {
            r.profile.digest = Digest::new(D1).unwrap()
        }),
    ];
    let rt = runtime(Fake::new(full_caps()));
    let (_, snapshot) = durable_snapshot(&rt).await;
    for (field, lie) in lies {
        let mut request = durable_request();
        lie(&mut request);
        let err = rt
            .resume(ResumeRequest {
                request,
                snapshot: snapshot.clone(),
            })
            .await
            .unwrap_err();
        protocol_invalid(&err, Operation::Resume, field);
    }
    assert_eq!(rt.provider().log.calls(Operation::Resume), 0);
}

#[tokio::test]
async fn resumed_instance_identity_is_checked_and_rolled_back_on_mismatch() {
    let rt = runtime(Fake::new(full_caps()));
    let (_, snapshot) = durable_snapshot(&rt).await;
    rt.provider().tamper_instance(|op, i| {
        if op == Operation::Resume {
            i.run_id = RunId::new("run-resumed-elsewhere").unwrap();
        }
    });
    let err = rt
        .resume(ResumeRequest {
            request: durable_request(),
            snapshot,
        })
        .await
        .unwrap_err();
    protocol_invalid(&err, Operation::InstanceIdentity, "run_id");
    assert_eq!(
        rt.provider().log.rollbacks_completed(Compensated::Resume),
        1
    );
    assert!(!rt.provider().has_instance(&id("inst-3")));
}
