//! `pause` and `resume` through the cgroup freezer: every process of the
//! sandbox, PID 1 included, stops until thawed. A paused sandbox is marked
//! by a `paused` file in its directory ([`State::paused_marker`]; its
//! status reads `paused`), and `exec` refuses it with `conflict` instead of
//! hanging.

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{BackendError, PauseOps, PlatformError, Result};

use crate::state::{State, require_meta};

/// What a failed blocking task of pause or resume is called.
const PAUSE_TASK: &str = "pause task";

/// Pause and resume of linux sandboxes (declared only with cgroups).
#[derive(Debug)]
pub struct LinuxPause {
    pub(crate) state: Arc<State>,
}

fn cgroup_of(state: &State, id: &str) -> Result<crate::cgroup::Cgroup> {
    let unavailable = |detail: String| -> BackendError {
        PlatformError::Unavailable {
            what: format!("sandbox {id}: its cgroup"),
            detail,
        }
        .into()
    };
    let cgroups = state
        .cgroups
        .as_ref()
        .ok_or_else(|| unavailable("no cgroup hierarchy is usable here".into()))?;
    cgroups
        .open(id)
        .map_err(|e| unavailable(e.to_string()))?
        .ok_or_else(|| unavailable("it has none".into()))
}

fn set(state: &State, id: &str, paused: bool) -> Result<()> {
    require_meta(state, id)?;
    let cg = cgroup_of(state, id)?;
    let marker = state.paused_marker(id);
    let io = |e: std::io::Error| BackendError::from_io(format!("sandbox {id}: pause marker"), &e);
    if paused {
        cg.freeze()
            .map_err(|e| e.failed(format_args!("sandbox {id}: freezing")))?;
        std::fs::write(&marker, b"").map_err(io)?;
    } else {
        cg.thaw()
            .map_err(|e| e.failed(format_args!("sandbox {id}: thawing")))?;
        match std::fs::remove_file(&marker) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(())
}

#[async_trait]
impl PauseOps for LinuxPause {
    async fn pause(&self, id: &str) -> Result<()> {
        let (state, id) = (self.state.clone(), id.to_string());
        corral_backend::task::blocking(PAUSE_TASK, move || set(&state, &id, true)).await
    }

    async fn resume(&self, id: &str) -> Result<()> {
        let (state, id) = (self.state.clone(), id.to_string());
        corral_backend::task::blocking(PAUSE_TASK, move || set(&state, &id, false)).await
    }
}
