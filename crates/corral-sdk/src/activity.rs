//! Activity records: while a run is in progress, a file under
//! [`ACTIVITY_DIR`] in the sandbox says so, and garbage collection spares
//! the sandbox.
//!
//! A backend opened with the `inline_activity` hint
//! ([`crate::ProviderHints`]) creates and removes the record itself inside
//! `exec` (it gets the path as `ExecRequest::activity_path`), and the core
//! makes no file call. Otherwise the core writes the record before the
//! command (after a `mkdir -p` of [`ACTIVITY_DIR`], unless the backend was
//! opened with the `write_creates_parents` hint) and removes it when the run
//! settles: success, failure, timeout, abort, and a run future dropped
//! midway (the removal is then spawned on the current tokio runtime).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use corral_backend::{Backend, now_ms};

use crate::Operation;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// The directory in every sandbox that holds activity records, one file per
/// run in progress, named by run id.
pub const ACTIVITY_DIR: &str = "/.corral/activity";

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// A new run id, unique across processes of one host and time:
/// `<epoch ms>-<pid>-<counter>`, hexadecimal.
pub(crate) fn new_run_id() -> String {
    let n = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
    format!("{:x}-{:x}-{:x}", now_ms(), std::process::id(), n)
}

/// One run's activity record: while it exists, garbage collection spares
/// the sandbox. Removed by [`ActivityRecord::end`], or on drop if the run
/// never got there.
pub struct ActivityRecord {
    /// The record's path in the sandbox.
    pub(crate) path: corral_backend::SandboxPath,
    /// True when the backend keeps the record inside `exec` (the
    /// `inline_activity` hint).
    pub(crate) inline: bool,
    pending: Option<(Arc<dyn Backend>, String)>,
}

impl Sandbox {
    /// Marks a run in progress in this sandbox, for a caller that runs a
    /// command through the backend itself (`corral exec` streams it live):
    /// until the record is ended, garbage collection (`corral gc --idle`)
    /// spares the sandbox, as it does during [`Sandbox::run`].
    ///
    /// # Errors
    ///
    /// The backend's failure to write the record, as a `run` error.
    pub async fn begin_run_activity(&self) -> Result<ActivityRecord> {
        self.begin_activity(&new_run_id()).await
    }

    /// Starts the activity record of run `run_id`.
    pub(crate) async fn begin_activity(&self, run_id: &str) -> Result<ActivityRecord> {
        let path = corral_backend::sandbox_path("path", &format!("{ACTIVITY_DIR}/{run_id}"))
            .map_err(|e| self.record_error(e))?;
        let hints = self.hints();
        if hints.inline_activity {
            return Ok(ActivityRecord {
                path,
                inline: true,
                pending: None,
            });
        }
        let files = self.backend().files();
        if !hints.write_creates_parents {
            files
                .mkdir(
                    self.id(),
                    &corral_backend::sandbox_path("path", ACTIVITY_DIR)
                        .map_err(|e| self.record_error(e))?,
                    true,
                )
                .await
                .map_err(|e| self.record_error(e))?;
        }
        let body = format!(
            "{{\"run_id\":\"{run_id}\",\"started_at_ms\":{}}}\n",
            now_ms()
        );
        files
            .write(self.id(), &path, body.as_bytes(), Some(0o600))
            .await
            .map_err(|e| self.record_error(e))?;
        Ok(ActivityRecord {
            path,
            inline: false,
            pending: Some((self.backend().clone(), self.id().to_string())),
        })
    }

    /// A failure to keep the record fails the run (`run`), saying so.
    fn record_error(&self, e: corral_backend::BackendError) -> crate::SandboxError {
        self.fail(
            e.code(),
            Operation::Run,
            format!("writing the run's activity record: {}", e.message()),
        )
    }
}

impl std::fmt::Debug for ActivityRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityRecord")
            .field("path", &self.path)
            .field("inline", &self.inline)
            .field("kept_by_the_core", &self.pending.is_some())
            .finish()
    }
}

impl ActivityRecord {
    /// Removes the record (kept by the core). A record already gone is
    /// fine; another failure leaves it behind, which only makes garbage
    /// collection spare the sandbox, so it does not fail the run.
    pub async fn end(mut self) {
        if let Some((backend, id)) = self.pending.take() {
            remove(&*backend, &id, &self.path).await;
        }
    }
}

/// Removes a record kept by the core; see [`ActivityRecord::end`] for why
/// a failure is ignored.
async fn remove(backend: &dyn Backend, id: &str, path: &corral_backend::SandboxPath) {
    let _ = backend.files().remove(id, path, false).await;
}

impl Drop for ActivityRecord {
    fn drop(&mut self) {
        let Some((backend, id)) = self.pending.take() else {
            return;
        };
        let path = self.path.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { remove(&*backend, &id, &path).await });
        }
    }
}
