//! The resource limits every process of a sandbox starts under, set by the
//! outer init before anything else runs, so PID 1 and every workload
//! inherit them: a low `RLIMIT_NOFILE`, so no sandbox can fill the host's
//! file table (the host caller's own limit may be far higher).

use rustix::process::{Resource, Rlimit, setrlimit};

/// The soft `RLIMIT_NOFILE` of every sandbox process.
pub const NOFILE_SOFT: u64 = 1024;
/// The hard `RLIMIT_NOFILE` of every sandbox process (the most a workload
/// can raise its own soft limit to).
pub const NOFILE_HARD: u64 = 4096;

/// Sets the sandbox's limits on this process (inherited by every child).
/// Lowering a limit needs no privilege; where the caller's hard limit is
/// already below ours, that lower one is kept.
pub fn apply() -> std::io::Result<()> {
    let current = rustix::process::getrlimit(Resource::Nofile);
    let cap = |v: u64| current.maximum.map_or(v, |m| m.min(v));
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(cap(NOFILE_SOFT)),
            maximum: Some(cap(NOFILE_HARD)),
        },
    )
    .map_err(std::io::Error::from)
}

/// Raises this process (a workload PID 1 just forked) to
/// [`crate::spawn::oom::WORKLOAD_SCORE_ADJ`], so the OOM killer takes it
/// before the init. Raising needs no privilege; a failure (no `/proc`)
/// only leaves the workload at the init's value.
///
/// In a user namespace the init is not dumpable (it changed its ids), so
/// its `/proc/self` files belong to the host's root and not even it may
/// open them for writing. It is made dumpable for the one `open`, and not
/// dumpable again before anything else happens; the write on the open file
/// needs no further check for a raise. A neighbour process of the same ids
/// could attach to a dumpable process, so this is called last before
/// `execve` (`super::child`), when the child holds nothing the workload it
/// becomes would not: capabilities dropped, filter installed, every
/// descriptor of PID 1's closed.
pub fn expose_to_oom_killer() {
    use rustix::process::{DumpableBehavior, set_dumpable_behavior};
    let value = crate::spawn::oom::WORKLOAD_SCORE_ADJ.to_string();
    let was_dumpable = matches!(
        rustix::process::dumpable_behavior(),
        Ok(DumpableBehavior::Dumpable)
    );
    if !was_dumpable {
        let _ = set_dumpable_behavior(DumpableBehavior::Dumpable);
    }
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/oom_score_adj");
    if !was_dumpable {
        let _ = set_dumpable_behavior(DumpableBehavior::NotDumpable);
    }
    if let Ok(mut file) = opened {
        let _ = std::io::Write::write_all(&mut file, value.as_bytes());
    }
}
