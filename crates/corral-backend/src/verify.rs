//! Construction-time check: every declared optional member exists.

use crate::backend::Backend;
use crate::error::{PlatformError, Result};

/// Refuses a backend that declares an optional member it does not implement,
/// with the `provider` code (the SDK's "a capability without its method
/// fails at creation"). Call it once when a backend is constructed.
pub fn verify(backend: &dyn Backend) -> Result<()> {
    let caps = backend.capabilities();
    let checks: [(&str, bool, bool); 12] = [
        ("pause", caps.pause, backend.pause_ops().is_some()),
        ("snapshot", caps.snapshot, backend.snapshot_ops().is_some()),
        (
            "snapshot_clone",
            caps.snapshot_clone,
            backend.snapshot_clone_ops().is_some(),
        ),
        ("terminal", caps.terminal, backend.terminal_ops().is_some()),
        (
            "start_process",
            caps.start_process,
            backend.process_ops().is_some(),
        ),
        ("usage", caps.usage, backend.usage_ops().is_some()),
        (
            "read_range",
            caps.read_range,
            backend.files().ranged().is_some(),
        ),
        (
            "contained_read",
            caps.contained_read,
            backend.contained_read_ops().is_some(),
        ),
        (
            "list_tree",
            caps.list_tree,
            backend.tree_list_ops().is_some(),
        ),
        (
            "write_batch",
            caps.write_batch,
            backend.batch_write_ops().is_some(),
        ),
        ("reclaim", caps.reclaim, backend.reclaim_ops().is_some()),
        (
            "port_connect",
            caps.port_connect,
            backend.port_connect_ops().is_some(),
        ),
    ];
    for (member, declared, present) in checks {
        if declared && !present {
            return Err(PlatformError::Defective {
                what: format!(
                    "the {} backend declares {member} but does not implement it",
                    backend.name()
                ),
            }
            .into());
        }
    }
    if caps.snapshot_clone && !caps.snapshot {
        return Err(PlatformError::Defective {
            what: format!(
                "the {} backend declares snapshot_clone without snapshot",
                backend.name()
            ),
        }
        .into());
    }
    Ok(())
}
