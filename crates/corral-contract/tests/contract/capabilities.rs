//! The capability envelope: defaults, cross-field rules, the minimum provider
//! and the conformance token derivation.

use crate::common;
use std::collections::BTreeSet;

use common::*;
use corral_contract::*;

fn minimal_json() -> serde_json::Value {
    serde_json::json!({
        "placement": "hosted",
        "tiers": ["container"],
        "platforms": [{"os": "linux", "architecture": "amd64"}],
        "image_mode": "profile",
        "network_modes": ["none"],
        "retention_modes": ["ephemeral_zdr"],
        "provider_revision": "minimum",
        "materialization_revision": "minimum",
    })
}

fn decode(v: &serde_json::Value) -> Result<SandboxProviderCapabilities, String> {
    serde_json::from_value(v.clone()).map_err(|e| e.to_string())
}

/// "Every optional capability defaults to the weakest legal value."
#[test]
fn optional_fields_default_to_the_weakest_legal_value() {
    let caps = decode(&minimal_json()).unwrap();
    assert!(caps.package_managers.is_empty());
    assert!(!caps.snapshots);
    assert_eq!(caps.snapshot_custody, SnapshotCustody::Runner);
    assert!(!caps.snapshot_clone);
    assert!(!caps.list_dir);
    assert!(!caps.list_project_dir);
    assert!(!caps.read_files);
    assert!(!caps.physically_contained_file_read);
    assert!(!caps.active_mount_write);
    assert!(!caps.open_process);
    assert_eq!(caps.egress_certification, EgressCertification::Unsupported);
    assert_eq!(caps.max_mounts.get(), 0);
    for (axis, level) in caps.enforcement.axes() {
        assert_eq!(level, EnforcementLevel::NotEnforced, "{axis}");
    }
}

#[test]
fn required_fields_are_required() {
    for field in [
        "placement",
        "tiers",
        "platforms",
        "image_mode",
        "network_modes",
        "retention_modes",
        "provider_revision",
        "materialization_revision",
    ] {
        let mut v = minimal_json();
        v.as_object_mut().unwrap().remove(field);
        let err = decode(&v).unwrap_err();
        assert!(err.contains(&format!("missing field `{field}`")), "{err}");
    }
    let mut v = minimal_json();
    v["surprise"] = serde_json::json!(true);
    assert!(decode(&v).unwrap_err().contains("unknown field `surprise`"));
}

/// The spec's "A minimum provider" envelope, field by field.
#[test]
fn minimum_is_the_specs_minimum_provider() {
    let min = SandboxProviderCapabilities::minimum();
    assert_eq!(min.placement, Placement::Hosted);
    assert_eq!(min.tiers, [Tier::Container]);
    assert_eq!(min.platforms, [Platform::LINUX_AMD64]);
    assert_eq!(min.image_mode, ImageMode::Profile);
    assert!(min.package_managers.is_empty());
    assert_eq!(min.network_modes, [NetworkMode::None]);
    assert_eq!(min.retention_modes, [RetentionMode::EphemeralZdr]);
    assert!(!min.snapshots);
    assert_eq!(min.snapshot_custody, SnapshotCustody::Runner);
    assert!(!min.list_dir);
    assert_eq!(min.egress_certification, EgressCertification::Unsupported);
    assert_eq!(min.max_mounts.get(), 0);
    // "nine axes, none of them runner_enforced"
    assert_eq!(min.enforcement.axes().len(), 9);
    assert!(
        min.enforcement
            .axes()
            .iter()
            .all(|(_, l)| *l != EnforcementLevel::RunnerEnforced)
    );
    // It decodes from the minimal JSON plus its enforcement.
    let mut v = minimal_json();
    v["enforcement"] = serde_json::to_value(min.enforcement).unwrap();
    assert_eq!(decode(&v).unwrap(), min);
    // And it passes its own validation.
    SandboxProviderCapabilities::new(min.clone().into_declaration()).unwrap();
}

/// "it declares neither `filesystem` nor `snapshot` nor `network-allowlist`,
/// so it records six skips of nine".
#[test]
fn minimum_provider_runs_three_cases_and_skips_six() {
    let min = SandboxProviderCapabilities::minimum();
    let tokens = min.conformance_tokens();
    let expected: BTreeSet<_> = [
        CapabilityToken::Process,
        CapabilityToken::NetworkNone,
        CapabilityToken::Zdr,
        CapabilityToken::Cleanup,
    ]
    .into_iter()
    .collect();
    assert_eq!(tokens, expected);
    let plan = min.conformance_plan();
    assert_eq!(plan.len(), 9);
    let run: Vec<_> = plan
        .iter()
        .filter(|(_, m)| m.is_empty())
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(
        run,
        [
            ConformanceCase::NoneEgress,
            ConformanceCase::ZdrRelease,
            ConformanceCase::OrphanReclaim
        ]
    );
    assert_eq!(plan.iter().filter(|(_, m)| !m.is_empty()).count(), 6);
    let (_, missing) = plan
        .iter()
        .find(|(c, _)| *c == ConformanceCase::PausePinning)
        .unwrap();
    assert_eq!(missing, &[CapabilityToken::Snapshot]);
}

/// "The memory oracle declares every token."
#[test]
fn a_full_envelope_runs_all_nine() {
    let caps = full_caps();
    assert_eq!(caps.conformance_tokens().len(), CapabilityToken::ALL.len());
    assert!(caps.conformance_plan().iter().all(|(_, m)| m.is_empty()));
}

/// "Docker declares six and omits `network-allowlist`."
#[test]
fn without_egress_certification_network_allowlist_is_not_derived() {
    let mut d = full_declaration();
    d.network_modes = vec![NetworkMode::None, NetworkMode::Allowlist];
    d.egress_certification = EgressCertification::Unsupported;
    let caps = SandboxProviderCapabilities::new(d).unwrap();
    let tokens = caps.conformance_tokens();
    assert_eq!(tokens.len(), 6);
    assert!(!tokens.contains(&CapabilityToken::NetworkAllowlist));
    let skipped: Vec<_> = caps
        .conformance_plan()
        .into_iter()
        .filter(|(_, m)| !m.is_empty())
        .map(|(c, _)| c)
        .collect();
    assert_eq!(skipped, [ConformanceCase::AllowlistEgress]);
}

/// The granularity warning: mounts without physically contained reads do not
/// earn `filesystem`, which gates both filesystem cases.
#[test]
fn filesystem_needs_mounts_and_physically_contained_reads() {
    let mut d = full_declaration();
    d.physically_contained_file_read = false;
    d.read_files = false;
    let tokens = SandboxProviderCapabilities::new(d)
        .unwrap()
        .conformance_tokens();
    assert!(!tokens.contains(&CapabilityToken::Filesystem));
    let mut d = full_declaration();
    d.max_mounts = MaxMounts::new(0).unwrap();
    d.list_dir = false;
    d.list_project_dir = false;
    d.active_mount_write = false;
    let tokens = SandboxProviderCapabilities::new(d)
        .unwrap()
        .conformance_tokens();
    assert!(!tokens.contains(&CapabilityToken::Filesystem));
}

#[test]
fn case_token_table_matches_the_contract() {
    use CapabilityToken as T;
    use ConformanceCase as C;
    let table: [(C, &[T]); 9] = [
        (C::StageSealExecute, &[T::Filesystem, T::Process]),
        (C::StageGitProject, &[T::Filesystem, T::Process]),
        (C::CheckpointClone, &[T::Snapshot]),
        (C::AllowlistEgress, &[T::NetworkAllowlist]),
        (C::DurableRoundTrip, &[T::Snapshot]),
        (C::NoneEgress, &[T::NetworkNone]),
        (C::ZdrRelease, &[T::Zdr]),
        (C::OrphanReclaim, &[T::Cleanup]),
        (C::PausePinning, &[T::Snapshot, T::Cleanup]),
    ];
    assert_eq!(ConformanceCase::ALL.len(), 9);
    for (case, tokens) in table {
        assert_eq!(case.required_tokens(), tokens, "{case}");
    }
}

/// Each cross-field rule is refused at decode with a message naming the field.
#[test]
fn cross_field_rules_are_refused_at_decode() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "snapshot_clone: true requires snapshots: true",
            serde_json::json!({"snapshot_clone": true}),
            "snapshot_clone: is true but snapshots is false",
        ),
        (
            "durable retention requires snapshots",
            serde_json::json!({"retention_modes": ["ephemeral_zdr", "durable"]}),
            "retention_modes: lists durable but snapshots is false",
        ),
        (
            "snapshot_custody must be runner without snapshots",
            serde_json::json!({"snapshot_custody": "provider"}),
            "snapshot_custody: must be runner when snapshots is false",
        ),
        (
            "snapshots require durable retention (corral)",
            serde_json::json!({"snapshots": true}),
            "snapshots: is true but retention_modes lacks durable",
        ),
        (
            "egress certification requires allowlist",
            serde_json::json!({"egress_certification": "advisory_filter"}),
            "egress_certification: is advisory_filter but network_modes lacks allowlist",
        ),
        (
            "max_mounts ≤ 64",
            serde_json::json!({"max_mounts": 65}),
            "max_mounts: 65 exceeds the maximum 64",
        ),
        (
            "non-empty tiers",
            serde_json::json!({"tiers": []}),
            "tiers: is empty",
        ),
        (
            "non-empty platforms",
            serde_json::json!({"platforms": []}),
            "platforms: is empty",
        ),
        (
            "non-empty network_modes",
            serde_json::json!({"network_modes": []}),
            "network_modes: is empty",
        ),
        (
            "non-empty retention_modes",
            serde_json::json!({"retention_modes": []}),
            "retention_modes: is empty",
        ),
        (
            "no duplicate tiers",
            serde_json::json!({"tiers": ["container", "container"]}),
            "tiers: lists container twice",
        ),
        (
            "no duplicate platforms",
            serde_json::json!({"platforms": [
                {"os": "linux", "architecture": "arm64"},
                {"os": "linux", "architecture": "arm64"}]}),
            "platforms: lists linux/arm64 twice",
        ),
        (
            "no duplicate package managers",
            serde_json::json!({"package_managers": ["apt", "apt"]}),
            "package_managers: lists apt twice",
        ),
        (
            "no duplicate network modes",
            serde_json::json!({"network_modes": ["none", "none"]}),
            "network_modes: lists none twice",
        ),
        (
            "no duplicate retention modes",
            serde_json::json!({"retention_modes": ["ephemeral_zdr", "ephemeral_zdr"]}),
            "retention_modes: lists ephemeral_zdr twice",
        ),
        (
            "readFiles carries physical containment (corral)",
            serde_json::json!({"read_files": true}),
            "read_files: is true but physically_contained_file_read is false",
        ),
        (
            "listDir needs mounts (corral)",
            serde_json::json!({"list_dir": true, "max_mounts": 0}),
            "list_dir: is true but max_mounts is 0",
        ),
        (
            "listProjectDir needs mounts (corral)",
            serde_json::json!({"list_project_dir": true, "max_mounts": 0}),
            "list_project_dir: is true but max_mounts is 0",
        ),
        (
            "active writes need mounts (corral)",
            serde_json::json!({"active_mount_write": true, "max_mounts": 0}),
            "active_mount_write: is true but max_mounts is 0",
        ),
        (
            "unknown enforcement level",
            serde_json::json!({"enforcement": {"memory_limit": "hopefully"}}),
            "enforcement level: \"hopefully\" is not one of",
        ),
        (
            "unknown enforcement axis",
            serde_json::json!({"enforcement": {"gpu_limit": "best_effort"}}),
            "unknown field `gpu_limit`",
        ),
    ];
    for (rule, patch, message) in cases {
        let mut v = minimal_json();
        for (k, val) in patch.as_object().unwrap() {
            v[k] = val.clone();
        }
        let err = decode(&v).expect_err(rule);
        assert!(err.contains(message), "{rule}: {err}");
        // The same rule refuses construction.
        if let Ok(d) = serde_json::from_value::<CapabilityDeclaration>(v.clone()) {
            let err = SandboxProviderCapabilities::new(d).expect_err(rule);
            assert!(err.to_string().contains(message), "{rule}: {err}");
        }
    }
}

/// "Every optional capability defaults to the weakest legal value": an
/// absent `max_mounts` declares 0 mounts, so an envelope that leaves it out
/// and claims a member operating on a mount is refused, naming the member
/// it left out (`max_mounts`) rather than the flag it wrote; an explicit
/// `0` names the flag.
#[test]
fn an_absent_max_mounts_is_zero_and_a_refusal_names_it() {
    for (flag, member) in [
        ("list_dir", "listDir enumerates a mount root"),
        ("list_project_dir", "listProjectDir enumerates a mount root"),
        (
            "active_mount_write",
            "beginActiveWrite publishes into a read-write mount",
        ),
    ] {
        let mut v = minimal_json();
        v[flag] = serde_json::json!(true);
        let absent = decode(&v).unwrap_err();
        assert_eq!(
            absent,
            format!(
                "max_mounts: is absent, which declares 0 mounts, but {flag} is true ({member})"
            ),
        );
        v["max_mounts"] = serde_json::json!(0);
        let explicit = decode(&v).unwrap_err();
        assert!(
            explicit.starts_with(&format!("{flag}: is true but max_mounts is 0 ({member})")),
            "{explicit}"
        );
        v["max_mounts"] = serde_json::json!(1);
        assert_eq!(decode(&v).unwrap().max_mounts.get(), 1);
    }
    // Absent and not needed: the default, 0.
    assert_eq!(decode(&minimal_json()).unwrap().max_mounts.get(), 0);
}

#[test]
fn valid_snapshot_envelopes_decode() {
    let mut v = minimal_json();
    v["snapshots"] = serde_json::json!(true);
    v["retention_modes"] = serde_json::json!(["durable"]);
    v["snapshot_custody"] = serde_json::json!("provider");
    v["snapshot_clone"] = serde_json::json!(true);
    v["network_modes"] = serde_json::json!(["allowlist"]);
    v["egress_certification"] = serde_json::json!("kernel_enforced");
    let caps = decode(&v).unwrap();
    let tokens = caps.conformance_tokens();
    assert!(tokens.contains(&CapabilityToken::Snapshot));
    assert!(tokens.contains(&CapabilityToken::NetworkAllowlist));
    assert!(!tokens.contains(&CapabilityToken::Zdr));
    assert!(!tokens.contains(&CapabilityToken::NetworkNone));
}

#[test]
fn egress_grades_are_ordered() {
    use EgressCertification as E;
    assert!(E::KernelEnforced.meets(E::AdvisoryFilter));
    assert!(E::AdvisoryFilter.meets(E::AdvisoryFilter));
    assert!(!E::Unsupported.meets(E::AdvisoryFilter));
}

#[test]
fn mount_plan_admission() {
    let caps = full_caps();
    let plan = |paths: &[&str]| {
        Mounts::new(
            paths
                .iter()
                .map(|p| MountSpec {
                    path: path(p),
                    access: MountAccess::ReadOnly,
                })
                .collect(),
        )
        .unwrap()
    };
    check_mount_plan(&plan(&["/workspace/app", "/workspace/app/vendor"]), &caps).unwrap();
    for (paths, root) in [
        (&["/tmp"][..], "/tmp"),
        (&["/workspace"][..], "/workspace/.checkfu"),
        (&["/workspace/.checkfu/x"][..], "/workspace/.checkfu"),
        (&["/mnt/session"][..], "/mnt/session/outputs"),
        (&["/home/checkfu/x"][..], "/home/checkfu"),
        (&["/"][..], "/dev"),
    ] {
        match check_mount_plan(&plan(paths), &caps) {
            Err(MountPlanRefusal::ReservedRoot { root: r, .. }) => assert_eq!(r, root),
            other => panic!("{paths:?}: {other:?}"),
        }
    }
    assert!(matches!(
        check_mount_plan(&plan(&["/a", "/a"]), &caps),
        Err(MountPlanRefusal::Conflict { .. })
    ));
    let min = SandboxProviderCapabilities::minimum();
    let refusal = check_mount_plan(&plan(&["/a"]), &min).unwrap_err();
    assert_eq!(refusal.to_string(), "mounts: 1 mounts exceed max_mounts 0");
    assert_eq!(
        refusal.into_error(),
        SandboxError::capability_unavailable(Requirement::Mounts)
    );
}

#[test]
fn write_admission_narrows_at_activation() {
    let mounts = request().mounts;
    let inside_mount = path("/workspace/app/a.txt");
    let inside_output = path("/mnt/session/outputs/result.json");
    assert!(write_admitted(
        InstanceState::Provisioning,
        &mounts,
        &inside_mount
    ));
    assert!(write_admitted(
        InstanceState::Provisioning,
        &mounts,
        &inside_output
    ));
    assert!(!write_admitted(
        InstanceState::Active,
        &mounts,
        &inside_mount
    ));
    assert!(write_admitted(
        InstanceState::Active,
        &mounts,
        &inside_output
    ));
    assert!(!write_admitted(
        InstanceState::Provisioning,
        &mounts,
        &path("/etc/passwd")
    ));
    assert!(!write_admitted(
        InstanceState::Provisioning,
        &mounts,
        &path("/workspace/application")
    ));
    assert!(!write_admitted(
        InstanceState::Active,
        &mounts,
        &path("/mnt/session/outputs")
    ));
}
