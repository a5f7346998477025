//! One valid result of every route: the reply body a conforming server
//! returns for the route's valid example request, built from the contract's
//! own constructors and named by the schema it conforms to.

use corral_contract::*;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::KitError;
use super::examples::{self, path};
use crate::protocol::{HandoffId, HandoffReply, Route, TransactionReply};

/// The reply body of one route and the schema (file stem under `schemas/`)
/// it conforms to; `None` for a route that replies `null`.
pub(super) struct ExampleResult {
    /// The schema's file stem.
    pub(super) schema: Option<&'static str>,
    /// The body.
    pub(super) body: Value,
}

fn result<T: Serialize>(schema: &'static str, value: &T) -> Result<ExampleResult, KitError> {
    Ok(ExampleResult {
        schema: Some(schema),
        body: serde_json::to_value(value).map_err(KitError::Json)?,
    })
}

fn null() -> ExampleResult {
    ExampleResult {
        schema: None,
        body: Value::Null,
    }
}

fn handoff<T: Serialize>(schema: &'static str, value: T) -> Result<ExampleResult, KitError> {
    result(
        schema,
        &HandoffReply {
            value,
            handoff: HandoffId("h-1".to_owned()),
        },
    )
}

fn transaction(state: JournalState) -> Result<ExampleResult, KitError> {
    result(
        "TransactionReply",
        &TransactionReply {
            transaction_id: TransactionId::new("tx-1")?,
            state,
        },
    )
}

/// The example instance, in `state`.
pub(super) fn instance(state: InstanceState) -> Result<SandboxInstance, InvalidValue> {
    Ok(SandboxInstance::for_request(
        examples::instance_id()?,
        &examples::provision()?,
        &examples::capabilities()?,
        state,
    ))
}

fn sha256(bytes: &[u8]) -> corral_contract::Digest {
    corral_contract::Digest::from_sha256_bytes(Sha256::digest(bytes).into())
}

/// The content of `/workspace/app/hello.txt` in every example.
const HELLO: &[u8] = b"hello\n";

/// The example result of `route`; `None` for the `openProcess` socket,
/// whose replies are frames (`vectors/frames.json`).
pub(super) fn of(route: Route) -> Result<Option<ExampleResult>, KitError> {
    let file_size = || FileSize::new(HELLO.len() as u64);
    Ok(Some(match route {
        Route::Capabilities => result("SandboxProviderCapabilities", &examples::capabilities()?)?,
        Route::Provision => handoff(
            "HandoffReply_SandboxInstance",
            instance(InstanceState::Provisioning)?,
        )?,
        Route::Activate | Route::Resume => handoff(
            "HandoffReply_SandboxInstance",
            instance(InstanceState::Active)?,
        )?,
        Route::WriteFile
        | Route::Destroy
        | Route::DestroySnapshot
        | Route::HandoffRollback(_)
        | Route::HandoffSettle(_) => null(),
        Route::BeginActiveWrite => transaction(JournalState::Open)?,
        Route::ActiveWriteCommit => transaction(JournalState::Committed)?,
        Route::ActiveWriteRollback => transaction(JournalState::RolledBack)?,
        Route::Execute => result(
            "SandboxExecutionResult",
            &SandboxExecutionResult {
                exit: ExitCause::Code(ExitCode::SUCCESS),
                interval: Interval::new(
                    Timestamp::parse("2026-11-29T19:00:00.000Z")?,
                    Timestamp::parse("2026-11-29T19:00:00.250Z")?,
                )?,
                stdout: StreamCapture {
                    content: OutputBytes::new(b"hi\n".to_vec())?,
                    truncated: false,
                },
                stderr: StreamCapture {
                    content: OutputBytes::new(Vec::new())?,
                    truncated: false,
                },
            },
        )?,
        Route::ReadFile => result(
            "ReadFileResult",
            &ReadFileResult {
                content: FileContent::new(HELLO.to_vec())?,
            },
        )?,
        Route::ReadFiles => result(
            "ReadFilesResult",
            &ReadFilesResult {
                files: vec![
                    ReadFileOutcome::Ok {
                        path: path("/workspace/app/a.txt")?,
                        content: FileContent::new(b"a\n".to_vec())?,
                        size: FileSize::new(2)?,
                    },
                    ReadFileOutcome::Missing {
                        path: path("/workspace/app/b.txt")?,
                    },
                ],
            },
        )?,
        Route::ListDir => result(
            "ListDirResult",
            &ListDirResult {
                entries: vec![ListDirEntry {
                    path: path("/workspace/app/hello.txt")?,
                    size: file_size()?,
                    sha256: sha256(HELLO),
                }],
            },
        )?,
        Route::ListProjectDir => result(
            "ListProjectDirResult",
            &ListProjectDirResult {
                entries: vec![
                    ProjectEntry::File {
                        path: path("/workspace/app/hello.txt")?,
                        size: file_size()?,
                        sha256: sha256(HELLO),
                    },
                    ProjectEntry::Symlink {
                        path: path("/workspace/app/latest")?,
                    },
                ],
                complete: true,
            },
        )?,
        Route::Snapshot => handoff("HandoffReply_SnapshotRef", examples::snapshot_ref()?)?,
        Route::CloneSnapshot => {
            let request = examples::clone_snapshot()?;
            let clone = request.source.cloned(
                SnapshotId::new("snap-2")?,
                request.target_session_id.clone(),
                Timestamp::parse("2026-11-29T19:45:00.000Z")?,
            );
            handoff("HandoffReply_SnapshotRef", clone)?
        }
        Route::Release => handoff(
            "HandoffReply_ReleaseDisposition",
            ReleaseDisposition::Released {
                snapshot: Box::new(examples::snapshot_ref()?),
            },
        )?,
        Route::Cleanup => result(
            "CleanupResult",
            &CleanupResult {
                instances: vec![InstanceId::new("inst-0")?],
                snapshots: Vec::new(),
            },
        )?,
        Route::OpenProcess => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// The example result of `route`, decoded as the client decodes it.
    fn decoded<T: DeserializeOwned>(route: Route) -> T {
        let r = of(route).unwrap().unwrap();
        serde_json::from_value(r.body).unwrap()
    }

    fn value<T: DeserializeOwned>(route: Route) -> T {
        decoded::<HandoffReply<T>>(route).value
    }

    /// Each example result passes the checks the runtime holds a provider's
    /// results to ("Every returned instance is compared field by field
    /// against the request the Runner sent"; the snapshot, clone, release
    /// and bounded-result checks).
    #[test]
    fn every_example_result_passes_the_runtimes_checks() {
        let request = examples::provision().unwrap();
        let caps = examples::capabilities().unwrap();
        for (route, state) in [
            (Route::Provision, InstanceState::Provisioning),
            (Route::Activate, InstanceState::Active),
            (Route::Resume, InstanceState::Active),
        ] {
            let instance: SandboxInstance = value(route);
            assert_eq!(
                identity_mismatches(&request, &instance, &caps, state),
                Vec::new(),
                "{route:?}"
            );
        }
        let snapshot: SnapshotRef = value(Route::Snapshot);
        assert_eq!(
            snapshot_mismatches(
                &examples::snapshot().unwrap(),
                &instance(InstanceState::Active).unwrap(),
                &snapshot
            ),
            Vec::new()
        );
        let clone: SnapshotRef = value(Route::CloneSnapshot);
        assert_eq!(
            clone_mismatches(&examples::clone_snapshot().unwrap(), &clone),
            Vec::new()
        );
        let released: ReleaseDisposition = value(Route::Release);
        released.validate_for(RetentionMode::Durable).unwrap();
        let command = examples::execute().unwrap().command;
        decoded::<SandboxExecutionResult>(Route::Execute)
            .validate_against(&command)
            .unwrap();
        decoded::<ReadFileResult>(Route::ReadFile)
            .validate_against(&examples::read_file().unwrap())
            .unwrap();
        decoded::<ReadFilesResult>(Route::ReadFiles)
            .validate_against(&examples::read_files().unwrap())
            .unwrap();
        decoded::<ListDirResult>(Route::ListDir)
            .validate_against(&examples::list_dir().unwrap())
            .unwrap();
        decoded::<ListProjectDirResult>(Route::ListProjectDir)
            .validate_against(&examples::list_project_dir().unwrap())
            .unwrap();
        decoded::<CleanupResult>(Route::Cleanup);
        decoded::<SandboxProviderCapabilities>(Route::Capabilities);
        for (route, state) in [
            (Route::BeginActiveWrite, JournalState::Open),
            (Route::ActiveWriteCommit, JournalState::Committed),
            (Route::ActiveWriteRollback, JournalState::RolledBack),
        ] {
            assert_eq!(decoded::<TransactionReply>(route).state, state);
        }
    }

    #[test]
    fn every_route_but_the_socket_has_a_result_and_null_replies_name_no_schema() {
        for route in Route::ALL {
            match of(route).unwrap() {
                None => assert_eq!(route, Route::OpenProcess),
                Some(r) => assert_eq!(r.schema.is_none(), r.body.is_null(), "{route:?}"),
            }
        }
    }
}
