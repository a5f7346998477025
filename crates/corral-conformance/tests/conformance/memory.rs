//! The memory oracle declares every token and passes all nine cases.

use crate::common;
use common::{assert_passed, assert_skips_name_their_missing_tokens, run_one};
use corral_conformance::targets::{MemoryTarget, backend_inventory};
use corral_conformance::{Outcome, Report, run};
use corral_contract::{CapabilityToken, ConformanceCase};

/// Runs `case` on a fresh memory target; the backend holds nothing after.
async fn passes(case: ConformanceCase) {
    let target = MemoryTarget::new();
    let report = run_one(&target, case).await;
    assert_passed(&report, case);
    let left = backend_inventory(&**target.backend()).await.unwrap();
    assert!(left.is_empty(), "{case} left {left}");
}

#[tokio::test]
async fn declared_mounts_stage_read_only_data_seals_output_is_bounded() {
    passes(ConformanceCase::StageSealExecute).await;
}

#[tokio::test]
async fn an_immutable_git_blob_stages_without_a_sandbox_credential() {
    passes(ConformanceCase::StageGitProject).await;
}

#[tokio::test]
async fn a_clone_lands_in_an_independent_target_session_snapshot() {
    passes(ConformanceCase::CheckpointClone).await;
}

#[tokio::test]
async fn only_the_declared_outbound_hosts_are_reachable() {
    passes(ConformanceCase::AllowlistEgress).await;
}

#[tokio::test]
async fn files_survive_snapshot_release_resume() {
    passes(ConformanceCase::DurableRoundTrip).await;
}

#[tokio::test]
async fn outbound_traffic_is_denied_for_a_none_network_profile() {
    passes(ConformanceCase::NoneEgress).await;
}

#[tokio::test]
async fn zdr_snapshots_are_forbidden_and_release_destroys_all_state() {
    passes(ConformanceCase::ZdrRelease).await;
}

#[tokio::test]
async fn orphans_are_reclaimed_by_a_runtime_restarted_from_nothing() {
    passes(ConformanceCase::OrphanReclaim).await;
}

#[tokio::test]
async fn a_pinned_snapshot_survives_cleanup_until_its_own_expiry() {
    passes(ConformanceCase::PausePinning).await;
}

#[tokio::test]
async fn the_oracle_passes_nine_and_skips_none() {
    let target = MemoryTarget::new();
    let report = run(&target).await.unwrap();
    let table = report.table();
    print!("{table}");
    for case in ConformanceCase::ALL {
        assert_passed(&report, *case);
    }
    assert_eq!(report.count(Outcome::Passed), 9);
    assert_eq!(report.count(Outcome::Skipped), 0);
    assert_eq!(report.run.tokens.len(), CapabilityToken::ALL.len());
    assert_skips_name_their_missing_tokens(&report);
    assert_eq!(table.lines().count(), 1 + 9 + 1);
    assert_eq!(table.lines().last(), Some("9 passed, 0 failed, 0 skipped"));
    assert!(report.finished_at >= report.started_at);
    let back: Report = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    assert_eq!(back, report);
    let left = backend_inventory(&**target.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
}
