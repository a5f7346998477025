//! Taking back, at start, the sandboxes a previous run of the service made
//! (its state file, [`crate::saved`]): each still in the backend is served
//! again with its template, metadata, end time and access token (derived
//! again, never stored); one whose end time passed while the service was
//! down is destroyed now; one the backend no longer holds, or that E2B's
//! protocol did not make (no `e2b` label), is forgotten, never touched.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use corral_backend::{SandboxStatus, now_ms};

use crate::Inner;
use crate::control::create::E2B_LABEL;
use crate::saved::{self, StateFileError};
use crate::state::Record;

/// What a restore did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restored {
    /// Sandboxes served again.
    pub served: usize,
    /// Sandboxes past their end time, destroyed.
    pub expired: usize,
    /// Records of sandboxes the backend no longer holds (or that are not
    /// E2B's), forgotten.
    pub gone: usize,
}

/// Restores the records of the service's state file (none without one).
pub(crate) async fn restore(inner: &Arc<Inner>) -> Result<Restored, StateFileError> {
    let Some(path) = &inner.config.state_file else {
        return Ok(Restored::default());
    };
    let mut done = Restored::default();
    for saved in saved::load(path)? {
        // Only a sandbox made through E2B's protocol (its label) is taken
        // back, or destroyed: a file naming any other names nothing here.
        let ours = matches!(
            inner.backend.connect(&saved.id).await,
            Ok(info) if info.status != SandboxStatus::Dead && info.labels.contains_key(E2B_LABEL)
        );
        if !ours {
            done.gone += 1;
            continue;
        }
        if saved.end_at_ms <= now_ms() {
            let _ = inner.backend.destroy(&saved.id).await;
            done.expired += 1;
            continue;
        }
        let access_token = crate::access_token::derive(&inner.api_key, &saved.id);
        let Ok(access_check) = corral_wire::Token::new(access_token.clone()) else {
            continue;
        };
        inner.seq.fetch_max(saved.seq + 1, Ordering::Relaxed);
        let record = Arc::new(Record {
            id: saved.id,
            template: saved.template,
            seq: saved.seq,
            access_token,
            access_check,
            metadata: saved.metadata,
            started_at_ms: saved.started_at_ms,
            end_at: tokio::sync::watch::channel(saved.end_at_ms).0,
            processes: Default::default(),
            next_pid: AtomicU32::new(1000),
        });
        inner.sandboxes.insert(record, Arc::clone(&inner.backend));
        done.served += 1;
    }
    inner.sandboxes.persist()?;
    Ok(done)
}
