//! Idle garbage collection: destroys `corral`-labelled sandboxes nobody has
//! used for a while, never one with a run in progress.

use std::sync::Arc;
use std::time::Duration;

use corral_backend::{Backend, CORRAL_LABEL, ErrorCode, FileType, Labels, now_ms};
use serde::Serialize;

use crate::Operation;
use crate::activity::ACTIVITY_DIR;
use crate::error::{Result, SandboxError};

/// Why a sandbox was left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum SpareReason {
    /// It has activity records: a run is in progress.
    RunInProgress {
        /// How many records.
        runs: usize,
    },
    /// It was active more recently than the idle threshold.
    RecentlyActive {
        /// How long it has been idle, in milliseconds.
        idle_ms: u64,
    },
}

/// A sandbox left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spared {
    /// The sandbox id.
    pub id: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SpareReason,
}

/// A sandbox that could not be inspected or destroyed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcFailure {
    /// The sandbox id.
    pub id: String,
    /// The error, one line.
    pub error: String,
}

/// What [`gc`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    /// The backend's name.
    pub backend: String,
    /// Sandboxes destroyed.
    pub removed: Vec<String>,
    /// Sandboxes left alone.
    pub spared: Vec<Spared>,
    /// Sandboxes that could not be inspected or destroyed (left alone).
    pub failed: Vec<GcFailure>,
}

/// Destroys every sandbox of `backend` labelled `corral` (whatever the
/// label's value: the SDK writes `1`, the `corral` CLI `cli`) that has been
/// idle for at least `idle` and has no run in progress.
///
/// A sandbox's last activity is the newest of its creation time and the
/// modification time of its [`ACTIVITY_DIR`] (which changes whenever a run
/// starts or ends, since its record is created and removed there). A
/// sandbox with any record in [`ACTIVITY_DIR`] has a run in progress and is
/// spared, whatever its age. A sandbox that cannot be inspected is reported
/// in `failed` and left alone. A run that starts between the inspection and
/// the destroy is not seen; the window is one `destroy` call.
pub async fn gc(backend: Arc<dyn Backend>, idle: Duration) -> Result<GcReport> {
    let name = backend.name().to_string();
    // Any value of the label counts: the SDK writes `1`, the CLI `cli`.
    let sandboxes: Vec<_> = backend
        .list(&Labels::new())
        .await
        .map_err(|e| SandboxError::from_backend(&name, Operation::Gc, e))?
        .into_iter()
        .filter(|info| info.labels.contains_key(CORRAL_LABEL))
        .collect();
    let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    let mut report = GcReport {
        backend: name,
        ..GcReport::default()
    };
    for info in sandboxes {
        let id = info.id.clone();
        let activity = match inspect(&*backend, &id).await {
            Ok(a) => a,
            Err(e) if e.code() == ErrorCode::NotFound => continue,
            Err(e) => {
                report.failed.push(GcFailure {
                    id,
                    error: e.to_string(),
                });
                continue;
            }
        };
        if activity.runs > 0 {
            report.spared.push(Spared {
                id,
                reason: SpareReason::RunInProgress {
                    runs: activity.runs,
                },
            });
            continue;
        }
        let last = info.created_at_ms.max(activity.last_ms.unwrap_or(0));
        let idle_for = now_ms().saturating_sub(last);
        if idle_for < idle_ms {
            report.spared.push(Spared {
                id,
                reason: SpareReason::RecentlyActive { idle_ms: idle_for },
            });
            continue;
        }
        match backend.destroy(&id).await {
            Ok(()) => report.removed.push(id),
            Err(e) if e.code() == ErrorCode::NotFound => report.removed.push(id),
            Err(e) => report.failed.push(GcFailure {
                id,
                error: e.to_string(),
            }),
        }
    }
    Ok(report)
}

/// What the activity directory of one sandbox says.
struct Activity {
    /// Records present (runs in progress).
    runs: usize,
    /// The directory's modification time, if it exists.
    last_ms: Option<u64>,
}

async fn inspect(backend: &dyn Backend, id: &str) -> corral_backend::Result<Activity> {
    let files = backend.files();
    let dir = corral_backend::sandbox_path("path", ACTIVITY_DIR)?;
    let stat = match files.stat(id, &dir).await {
        Ok(s) => s,
        Err(e) if e.code() == ErrorCode::NotFound => {
            // Never ran anything through the SDK core — unless the sandbox
            // itself is gone, which `connect` tells apart.
            backend.connect(id).await?;
            return Ok(Activity {
                runs: 0,
                last_ms: None,
            });
        }
        Err(e) => return Err(e),
    };
    if stat.file_type != FileType::Directory {
        return Ok(Activity {
            runs: 0,
            last_ms: Some(stat.modified_at_ms),
        });
    }
    let entries = files.list(id, &dir).await?;
    Ok(Activity {
        runs: entries.len(),
        last_ms: Some(stat.modified_at_ms),
    })
}
