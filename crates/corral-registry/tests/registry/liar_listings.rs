//! Listings: `listDir` — "Runtime rejects more entries than
//! `max_entries`"; `listProjectDir` — "a listing that is not
//! `complete: true`, or over `max_entries`". And the overclaim: "`list_dir:
//! true` with `listDir` undefined refuses identically".

use crate::liar;
use corral_contract::{
    ConflictState, InstanceState, ListDirRequest, ListProjectDirRequest, MaxEntries, Operation,
    RetentionMode, SandboxError, SandboxInstance, SandboxProvider,
};
use liar::fixtures::{
    LiarRuntime, MOUNT, assert_protocol_invalid, memory_liar, path, refused, runtime,
};
use liar::flows::active_with_files;
use liar::lie::{Lie, ProjectListingLie};

const FILE: &str = "/workspace/app/a.txt";

async fn staged(lie: Option<Lie>) -> (LiarRuntime, SandboxInstance) {
    let liar = memory_liar();
    if let Some(lie) = lie {
        liar.tell(lie);
    }
    let runtime = runtime(liar);
    let (_, instance) =
        active_with_files(&runtime, RetentionMode::EphemeralZdr, &[(FILE, b"abc")]).await;
    (runtime, instance)
}

fn list_dir(instance: &SandboxInstance, max: u64) -> ListDirRequest {
    ListDirRequest {
        instance_id: instance.instance_id.clone(),
        root: path(MOUNT),
        max_entries: MaxEntries::new(max).expect("literal"),
    }
}

fn list_project_dir(instance: &SandboxInstance, max: u64) -> ListProjectDirRequest {
    ListProjectDirRequest {
        instance_id: instance.instance_id.clone(),
        root: path(MOUNT),
        max_entries: MaxEntries::new(max).expect("literal"),
    }
}

/// The honest baseline: one file, listed by both members within bounds.
#[tokio::test]
async fn listings_accept_honest_results() {
    let (runtime, instance) = staged(None).await;
    let listed = runtime
        .list_dir(list_dir(&instance, 1))
        .await
        .expect("an honest listing is accepted");
    assert_eq!(listed.entries.len(), 1);
    assert_eq!(listed.entries[0].path.as_str(), FILE);
    let project = runtime
        .list_project_dir(list_project_dir(&instance, 1))
        .await
        .expect("an honest project listing is accepted");
    assert!(project.complete);
    assert_eq!(project.entries.len(), 1);
}

/// `listDir`: "more entries than `max_entries`".
#[tokio::test]
async fn list_dir_rejects_more_entries_than_max_entries() {
    let (runtime, instance) = staged(Some(Lie::ListDirOverMaxEntries)).await;
    let error = refused(runtime.list_dir(list_dir(&instance, 1)).await);
    assert_protocol_invalid(
        &error,
        Operation::ListDir,
        "entries",
        "at most 1 entries (max_entries)",
        "2 entries",
    );
}

/// `listProjectDir`: "a listing that is not `complete: true`".
#[tokio::test]
async fn list_project_dir_rejects_incomplete_listing() {
    let (runtime, instance) =
        staged(Some(Lie::ProjectListing(ProjectListingLie::Incomplete))).await;
    let error = refused(
        runtime
            .list_project_dir(list_project_dir(&instance, 10))
            .await,
    );
    assert_protocol_invalid(
        &error,
        Operation::ListProjectDir,
        "complete",
        "true",
        "false",
    );
}

/// `listProjectDir`: "… or over `max_entries`".
#[tokio::test]
async fn list_project_dir_rejects_more_entries_than_max_entries() {
    let (runtime, instance) =
        staged(Some(Lie::ProjectListing(ProjectListingLie::OverMaxEntries))).await;
    let error = refused(
        runtime
            .list_project_dir(list_project_dir(&instance, 1))
            .await,
    );
    assert_protocol_invalid(
        &error,
        Operation::ListProjectDir,
        "entries",
        "at most 1 entries (max_entries)",
        "2 entries",
    );
}

/// "`list_dir: true` with `listDir` undefined refuses identically": the
/// member's typed refusal reaches the caller as the absent member's
/// refusal — never as an empty listing.
#[tokio::test]
async fn list_dir_overclaim_refuses_identically_to_absence() {
    let (runtime, instance) = staged(Some(Lie::ListDirRefuses)).await;
    assert!(runtime.capabilities().list_dir, "the liar claims listDir");
    let error = refused(runtime.list_dir(list_dir(&instance, 10)).await);
    assert_eq!(
        error,
        SandboxError::lifecycle_conflict(
            Operation::ListDir,
            &[InstanceState::Active],
            ConflictState::ListDirUnsupported
        )
    );
    assert_eq!(runtime.provider().ledger().calls(Operation::ListDir), 1);
}
