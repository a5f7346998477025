//! The `corral.creator` label: which process made a sandbox of a front
//! (`corral run`, `corral mcp`), as `<pid>:<start time>`, so that plain
//! `corral gc` reclaims one whose creator is gone on every backend — where
//! the backend cannot bind the sandbox's lifetime to its creator itself
//! (local, docker), this is what ends it after a `kill -9`.

use std::sync::Arc;

use corral_backend::host_process::process_start as start_time;
use corral_backend::{Backend, Labels};
use serde::Serialize;

/// The label naming a sandbox's creating process.
pub const CREATOR_LABEL: &str = "corral.creator";

/// This process as a [`CREATOR_LABEL`] value; `None` without `/proc`.
pub fn me() -> Option<String> {
    let pid = std::process::id();
    start_time(pid).map(|start| format!("{pid}:{start}"))
}

/// Adds [`CREATOR_LABEL`] for this process to `labels` (nothing without `/proc`).
pub fn label(labels: &mut Labels) {
    if let Some(me) = me() {
        // `pid:start`, digits and a colon: a label value by construction.
        labels
            .insert(CREATOR_LABEL, me)
            .expect("a creator is a label value");
    }
}

/// Whether the creator a label value names is gone; `false` for a value
/// that names no process this host can check (never reclaim on doubt).
pub fn gone(value: &str) -> bool {
    let Some((pid, start)) = value.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    start_time(pid) != Some(start)
}

/// What one backend's creator sweep did.
#[derive(Debug, Default, Serialize)]
pub struct CreatorSweep {
    /// The backend.
    pub backend: String,
    /// Sandboxes destroyed because their creator is gone.
    pub removed: Vec<String>,
    /// Sandboxes whose destroy failed, with why.
    pub failed: Vec<String>,
}

/// Destroys the sandboxes of `backend` whose [`CREATOR_LABEL`] names a
/// process that is gone.
pub async fn sweep(backend: &Arc<dyn Backend>) -> CreatorSweep {
    let mut report = CreatorSweep {
        backend: backend.name().to_string(),
        ..CreatorSweep::default()
    };
    let listed = match backend.list(&Labels::new()).await {
        Ok(l) => l,
        Err(e) => {
            report.failed.push(format!("listing: {}", e.message()));
            return report;
        }
    };
    for info in listed {
        if info.labels.get(CREATOR_LABEL).is_some_and(|v| gone(v)) {
            match backend.destroy(&info.id).await {
                Ok(()) => report.removed.push(info.id),
                Err(e) => report.failed.push(format!("{}: {}", info.id, e.message())),
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_creator_is_alive_exactly_while_its_process_runs() {
        let me = me().expect("/proc is readable");
        assert!(!gone(&me), "this process");
        let (pid, start) = me.split_once(':').unwrap();
        let start: u64 = start.parse().unwrap();
        assert!(gone(&format!("{pid}:{}", start + 1)), "a reused pid");
        assert!(gone("4294967295:1"), "no such process");
        for doubtful in ["", "12", "x:1", "1:y"] {
            assert!(!gone(doubtful), "{doubtful:?} is never reclaimed");
        }
    }
}
