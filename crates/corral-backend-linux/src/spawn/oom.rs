//! Shielding a sandbox's init from the OOM killer.
//!
//! A sandbox's tmpfs is charged to its memory cgroup, so a disk fill is an
//! out-of-memory event there; the kernel must then kill a workload, never
//! the init, or the sandbox is left with no PID 1 to answer. The host
//! writes [`INIT_SCORE_ADJ`] for the outer init right after starting it,
//! before it forks PID 1, which inherits it (lowering needs
//! `CAP_SYS_RESOURCE`, which only the host side may have); PID 1 in turn
//! raises every workload it starts to [`WORKLOAD_SCORE_ADJ`] (raising needs
//! no privilege), so the OOM killer prefers them.

use std::sync::OnceLock;

/// The `oom_score_adj` of both init stages: never chosen by the OOM killer.
pub const INIT_SCORE_ADJ: i32 = -1000;
/// The `oom_score_adj` of every workload process: chosen first.
pub const WORKLOAD_SCORE_ADJ: i32 = 1000;

/// Why inits could not be shielded, from the first refusal on.
static UNSHIELDED: OnceLock<String> = OnceLock::new();

/// Writes [`INIT_SCORE_ADJ`] for host process `pid` (a just-started outer
/// init). A host that may not lower it (no `CAP_SYS_RESOURCE`) goes on —
/// the sandbox still works, its init is only as exposed as any process —
/// and records why once, for [`shield_failure`] to tell (never on stderr,
/// which belongs to the program using the backend).
pub fn protect_init(pid: u32) {
    let path = format!("/proc/{pid}/oom_score_adj");
    if let Err(e) = std::fs::write(&path, INIT_SCORE_ADJ.to_string()) {
        let _ = UNSHIELDED.set(format!(
            "sandbox inits are not shielded from the OOM killer on this host (writing \
             oom_score_adj {INIT_SCORE_ADJ}: {e}; it needs CAP_SYS_RESOURCE)"
        ));
    }
}

/// Why this process could not shield an init it started, once it failed to.
pub fn shield_failure() -> Option<&'static str> {
    UNSHIELDED.get().map(String::as_str)
}
