//! `usage`: CPU, memory and processes from the sandbox's cgroup; disk as
//! the space used on its tmpfs.

use std::sync::Arc;

use async_trait::async_trait;
use corral_backend::{Result, Usage, UsageOps};

use crate::state::{State, require_meta};

/// Usage of linux sandboxes (declared only with cgroups).
#[derive(Debug)]
pub struct LinuxUsage {
    pub(crate) state: Arc<State>,
}

fn usage(state: &State, id: &str) -> Result<Usage> {
    require_meta(state, id)?;
    let stats = state
        .cgroups
        .as_ref()
        .and_then(|c| c.open(id).ok().flatten())
        .map(|cg| cg.stats())
        .transpose()
        .map_err(|e| e.failed(format_args!("sandbox {id}: reading its usage")))?;
    let disk = rustix::fs::statvfs(state.fs_dir(id)).ok().map(|s| {
        s.f_blocks
            .saturating_sub(s.f_bfree)
            .saturating_mul(s.f_frsize)
    });
    Ok(Usage {
        cpu_ms: stats.map(|s| s.cpu_usage_ns / 1_000_000),
        memory_bytes: stats.map(|s| s.memory_bytes),
        disk_bytes: disk,
        processes: stats.map(|s| s.pids),
    })
}

#[async_trait]
impl UsageOps for LinuxUsage {
    async fn usage(&self, id: &str) -> Result<Usage> {
        let (state, id) = (self.state.clone(), id.to_string());
        crate::blocking::blocking(move || usage(&state, &id)).await
    }
}
