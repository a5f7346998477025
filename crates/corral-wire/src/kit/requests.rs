//! Golden vectors of the unary routes: for every member one valid request
//! body and invalid variations of it, each with the disposition the
//! server's decoder gives it, and one valid result; likewise for the
//! settlement routes of the handoffs and active-write transactions.

use corral_contract::bounds;
use corral_contract::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::KitError;
use super::disposition;
use super::examples;
use super::results;
use crate::protocol::{
    HandoffId, HandoffTicket, InstanceBody, Route, SnapshotBody, TransactionTicket,
};

/// One variation of a valid body: what it changes, and how.
enum Edit {
    /// Drop the member at this JSON pointer.
    Remove(&'static str),
    /// Replace (or add) the member at this JSON pointer.
    Set(&'static str, Value),
}

/// An invalid example: its name and the edit that makes it.
type Variation = (&'static str, Edit);

fn apply(valid: &Value, edit: &Edit) -> Value {
    let mut body = valid.clone();
    let (pointer, replacement) = match edit {
        Edit::Remove(pointer) => (*pointer, None),
        Edit::Set(pointer, value) => (*pointer, Some(value.clone())),
    };
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if let Some(Value::Object(map)) = body.pointer_mut(parent) {
        match replacement {
            Some(value) => {
                map.insert(key.to_owned(), value);
            }
            None => {
                map.remove(key);
            }
        }
    } else if let (Some(Value::Array(items)), Ok(index), Some(value)) =
        (body.pointer_mut(parent), key.parse::<usize>(), replacement)
        && let Some(slot) = items.get_mut(index)
    {
        *slot = value;
    }
    body
}

/// The examples of one request type: its valid body, then each variation,
/// each with its disposition.
fn examples<T: Serialize + DeserializeOwned>(
    valid: &T,
    variations: &[Variation],
) -> Result<Vec<Value>, KitError> {
    let valid = serde_json::to_value(valid).map_err(KitError::Json)?;
    let mut examples = vec![json!({
        "name": "valid",
        "body": valid,
        "disposition": disposition::of_body::<T>(&valid),
    })];
    for (name, edit) in variations {
        let body = apply(&valid, edit);
        examples.push(json!({
            "name": name,
            "body": body,
            "disposition": disposition::of_body::<T>(&body),
        }));
    }
    Ok(examples)
}

/// The `result` member of a vector file: the schema the reply conforms to
/// (`null` for a `null` reply) and the reply body.
fn result_of(route: Route) -> Result<Value, KitError> {
    Ok(match results::of(route)? {
        Some(r) => json!({ "type": r.schema, "body": r.body }),
        None => Value::Null,
    })
}

/// The vector file of one route: its examples and its example result.
fn member<T: Serialize + DeserializeOwned>(
    route: Route,
    request_type: &str,
    valid: &T,
    variations: Vec<Variation>,
) -> Result<(String, Value), KitError> {
    let name = route.path().trim_start_matches("/v1/").to_owned();
    let file = json!({
        "route": route.path(),
        "method": "POST",
        "operation": route.operation().to_string(),
        "request_type": request_type,
        "examples": examples(valid, &variations)?,
        "result": result_of(route)?,
    });
    Ok((name, file))
}

/// The vector file of a settlement route family (`<member>/rollback` of
/// the six handoffs, …): one ticket type, one result, several routes.
fn settlement<T: Serialize + DeserializeOwned>(
    name: &str,
    routes: &[Route],
    request_type: &str,
    valid: &T,
    variations: Vec<Variation>,
) -> Result<(String, Value), KitError> {
    let Some(first) = routes.first() else {
        return Ok((name.to_owned(), Value::Null));
    };
    let listed: Vec<Value> = routes
        .iter()
        .map(|r| json!({ "route": r.path(), "operation": r.operation().to_string() }))
        .collect();
    let file = json!({
        "routes": listed,
        "method": "POST",
        "request_type": request_type,
        "examples": examples(valid, &variations)?,
        "result": result_of(*first)?,
    });
    Ok((name.to_owned(), file))
}

/// The settlement routes' vector files: handoff rollback and settle, and
/// the active-write commit and rollback.
fn settlements() -> Result<Vec<(String, Value)>, KitError> {
    let handoffs = |route: fn(HandoffMember) -> Route| -> Vec<Route> {
        HandoffMember::ALL.map(route).to_vec()
    };
    let handoff = HandoffTicket {
        handoff: HandoffId("h-1".to_owned()),
    };
    let ticket_variations = || {
        vec![
            ("handoff_missing", Edit::Remove("/handoff")),
            ("handoff_not_a_string", Edit::Set("/handoff", json!(7))),
            unknown_field(),
        ]
    };
    let transaction = TransactionTicket {
        transaction_id: TransactionId::new("tx-1")?,
    };
    let transaction_variations = || {
        vec![
            ("transaction_id_missing", Edit::Remove("/transaction_id")),
            (
                "transaction_id_malformed",
                Edit::Set("/transaction_id", json!("tx 1")),
            ),
            unknown_field(),
        ]
    };
    Ok(vec![
        settlement(
            "handoff_rollback",
            &handoffs(Route::HandoffRollback),
            "HandoffTicket",
            &handoff,
            ticket_variations(),
        )?,
        settlement(
            "handoff_settle",
            &handoffs(Route::HandoffSettle),
            "HandoffTicket",
            &handoff,
            ticket_variations(),
        )?,
        settlement(
            "active_write_commit",
            &[Route::ActiveWriteCommit],
            "TransactionTicket",
            &transaction,
            transaction_variations(),
        )?,
        settlement(
            "active_write_rollback",
            &[Route::ActiveWriteRollback],
            "TransactionTicket",
            &transaction,
            transaction_variations(),
        )?,
    ])
}

fn unknown_field() -> Variation {
    ("unknown_member", Edit::Set("/surplus", json!(true)))
}

fn bad_instance() -> Variation {
    (
        "instance_id_malformed",
        Edit::Set("/instance_id", json!("Inst 1!")),
    )
}

fn no_instance() -> Variation {
    ("instance_id_missing", Edit::Remove("/instance_id"))
}

/// Every unary route's vector file, keyed by the route's name.
pub(super) fn vectors() -> Result<Vec<(String, Value)>, KitError> {
    let instance = InstanceBody {
        instance_id: examples::instance_id()?,
    };
    let snapshot = SnapshotBody {
        snapshot_id: SnapshotId::new("snap-1")?,
    };
    let mut files = vec![
        member(
            Route::Provision,
            "SandboxProvisionRequest",
            &examples::provision()?,
            vec![
                ("lease_epoch_missing", Edit::Remove("/lease_epoch")),
                (
                    "root_image_without_digest",
                    Edit::Set("/root_image", json!("docker.io/library/alpine:3.20")),
                ),
                (
                    "expires_at_not_rfc3339",
                    Edit::Set("/expires_at", json!("tomorrow")),
                ),
                (
                    "mount_path_relative",
                    Edit::Set("/mounts/0/path", json!("workspace/app")),
                ),
                (
                    "profile_digest_malformed",
                    Edit::Set("/profile/digest", json!("sha256:zz")),
                ),
                (
                    "allowlist_without_destinations",
                    Edit::Remove("/profile/network/destinations"),
                ),
                unknown_field(),
            ],
        )?,
        member(
            Route::WriteFile,
            "WriteFileRequest",
            &examples::write_file()?,
            vec![
                no_instance(),
                ("path_relative", Edit::Set("/path", json!("hello.txt"))),
                (
                    "content_not_base64",
                    Edit::Set("/content", json!("not base64!")),
                ),
                unknown_field(),
            ],
        )?,
        member(
            Route::BeginActiveWrite,
            "ActiveWriteRequest",
            &examples::begin_active_write()?,
            vec![
                bad_instance(),
                ("batch_empty", Edit::Set("/batch", json!({"files": []}))),
                ("batch_missing", Edit::Remove("/batch")),
            ],
        )?,
        member(
            Route::Activate,
            "InstanceBody",
            &instance,
            vec![no_instance(), bad_instance(), unknown_field()],
        )?,
        member(
            Route::Execute,
            "ExecuteRequest",
            &examples::execute()?,
            vec![
                no_instance(),
                (
                    "timeout_zero",
                    Edit::Set("/command/timeout_seconds", json!(0)),
                ),
                ("command_missing", Edit::Remove("/command")),
                unknown_field(),
            ],
        )?,
        member(
            Route::ReadFile,
            "ReadFileRequest",
            &examples::read_file()?,
            vec![
                (
                    "path_outside_allowed_root",
                    Edit::Set("/path", json!("/etc/passwd")),
                ),
                ("maximum_bytes_missing", Edit::Remove("/maximum_bytes")),
                bad_instance(),
            ],
        )?,
        member(
            Route::ReadFiles,
            "ReadFilesRequest",
            &examples::read_files()?,
            vec![
                (
                    "aggregate_budget_not_the_sum",
                    Edit::Set("/aggregate_budget_bytes", json!(1)),
                ),
                (
                    "member_outside_allowed_root",
                    Edit::Set("/files/0/path", json!("/etc/passwd")),
                ),
                no_instance(),
            ],
        )?,
        member(
            Route::ListDir,
            "ListDirRequest",
            &examples::list_dir()?,
            vec![
                (
                    "max_entries_over_bound",
                    Edit::Set("/max_entries", json!(bounds::MAX_LIST_ENTRIES + 1)),
                ),
                ("root_relative", Edit::Set("/root", json!("app"))),
                unknown_field(),
            ],
        )?,
        member(
            Route::ListProjectDir,
            "ListProjectDirRequest",
            &examples::list_project_dir()?,
            vec![
                ("max_entries_missing", Edit::Remove("/max_entries")),
                bad_instance(),
            ],
        )?,
        member(
            Route::Snapshot,
            "SnapshotRequest",
            &examples::snapshot()?,
            vec![
                ("expires_at_missing", Edit::Remove("/expires_at")),
                no_instance(),
            ],
        )?,
        member(
            Route::CloneSnapshot,
            "CloneSnapshotRequest",
            &examples::clone_snapshot()?,
            vec![
                ("target_session_missing", Edit::Remove("/target_session_id")),
                (
                    "source_digest_malformed",
                    Edit::Set("/source/profile_digest", json!("sha256:zz")),
                ),
            ],
        )?,
        member(
            Route::Release,
            "ReleaseRequest",
            &examples::release()?,
            vec![
                no_instance(),
                (
                    "snapshot_expires_at_not_rfc3339",
                    Edit::Set("/snapshot_expires_at", json!("2026-13-01")),
                ),
            ],
        )?,
        member(
            Route::Resume,
            "ResumeRequest",
            &examples::resume()?,
            vec![
                ("snapshot_missing", Edit::Remove("/snapshot")),
                (
                    "request_lease_epoch_missing",
                    Edit::Remove("/request/lease_epoch"),
                ),
            ],
        )?,
        member(
            Route::Destroy,
            "InstanceBody",
            &instance,
            vec![no_instance(), bad_instance()],
        )?,
        member(
            Route::DestroySnapshot,
            "SnapshotBody",
            &snapshot,
            vec![
                ("snapshot_id_missing", Edit::Remove("/snapshot_id")),
                unknown_field(),
            ],
        )?,
        member(
            Route::Cleanup,
            "CleanupRequest",
            &examples::cleanup()?,
            vec![
                (
                    "orphaned_before_after_now",
                    Edit::Set("/orphaned_before", json!("2026-11-29T21:00:00.000Z")),
                ),
                (
                    "pin_twice",
                    Edit::Set("/pinned_snapshots", json!(["snap-1", "snap-1"])),
                ),
                ("now_missing", Edit::Remove("/now")),
            ],
        )?,
    ];
    files.extend(settlements()?);
    Ok(files)
}
