//! cgroup v2: one directory in the unified hierarchy, controllers enabled
//! from the parent's `cgroup.subtree_control`.

use std::path::{Path, PathBuf};

use super::detect::{self, Membership, Mount};
use super::error::{CgroupError, Controller, Settle};
use super::{CgroupLimits, CgroupStats, PARENT, fs};

/// The controllers corral enables for its sandboxes.
const NEEDED: [Controller; 3] = [Controller::Memory, Controller::Pids, Controller::Cpu];

/// Finds the unified hierarchy and delegates the needed controllers to
/// corral's parent below this process's cgroup; returns that parent.
///
/// Fails when there is no unified mount, when a needed controller is bound
/// to a v1 hierarchy instead (a hybrid host), or when the kernel refuses to
/// enable it (this process's cgroup is not the root and holds processes:
/// the "no internal processes" rule).
pub(crate) fn delegate(
    mounts: &[Mount],
    memberships: &[Membership],
) -> Result<PathBuf, CgroupError> {
    let own = detect::v2_dir(mounts, memberships).ok_or(CgroupError::MissingController {
        controller: Controller::Memory,
    })?;
    let available_file = own.join("cgroup.controllers");
    let available = fs::read(&available_file)?;
    for controller in NEEDED {
        if !has_word(&available, controller.as_str()) {
            return Err(CgroupError::MissingController { controller });
        }
    }
    enable(&own)?;
    let parent = own.join(PARENT);
    fs::mkdir_all(&parent)?;
    enable(&parent)?;
    Ok(parent)
}

fn has_word(text: &str, word: &str) -> bool {
    text.split_whitespace().any(|w| w == word)
}

/// Enables the needed controllers for the children of `dir`, writing only
/// when one is missing.
fn enable(dir: &Path) -> Result<(), CgroupError> {
    let file = dir.join("cgroup.subtree_control");
    let enabled = fs::read(&file)?;
    let missing: Vec<String> = NEEDED
        .iter()
        .filter(|c| !has_word(&enabled, c.as_str()))
        .map(|c| format!("+{c}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    fs::write(&file, &missing.join(" "))
}

/// Creates the cgroup and writes the limits; on failure removes it.
pub(crate) fn create(dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
    fs::mkdir(dir)?;
    let result = apply(dir, limits);
    if result.is_err() {
        // Best effort: the error being returned is the one that matters.
        let _ = fs::rmdir_tree(dir);
    }
    result
}

fn apply(dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
    if let Some(bytes) = limits.memory_bytes {
        fs::write(&dir.join("memory.max"), &bytes.to_string())?;
        // Absent when the kernel has no swap accounting: then there is no
        // swap to limit.
        fs::write_optional(&dir.join("memory.swap.max"), "0")?;
    }
    if let Some(pids) = limits.pids {
        fs::write(&dir.join("pids.max"), &pids.to_string())?;
    }
    if let Some(millicores) = limits.cpu_millicores {
        let value = format!("{} {}", super::quota_us(millicores), super::CPU_PERIOD_US);
        fs::write(&dir.join("cpu.max"), &value)?;
    }
    Ok(())
}

/// Replaces every limit: the `Some` fields as [`apply`] writes them, the
/// `None` ones as `max`.
pub(crate) fn set_limits(dir: &Path, limits: &CgroupLimits) -> Result<(), CgroupError> {
    apply(dir, limits)?;
    if limits.memory_bytes.is_none() {
        fs::write(&dir.join("memory.max"), "max")?;
    }
    if limits.pids.is_none() {
        fs::write(&dir.join("pids.max"), "max")?;
    }
    if limits.cpu_millicores.is_none() {
        fs::write(&dir.join("cpu.max"), "max")?;
    }
    Ok(())
}

/// Moves `pid` into the cgroup.
pub(crate) fn add_pid(dir: &Path, pid: u32) -> Result<(), CgroupError> {
    fs::write(&dir.join("cgroup.procs"), &pid.to_string())
}

/// Sets `cgroup.freeze` and waits for `cgroup.events` to agree.
pub(crate) fn set_frozen(dir: &Path, frozen: bool) -> Result<(), CgroupError> {
    let (value, wait) = if frozen {
        ("1", Settle::Frozen)
    } else {
        ("0", Settle::Thawed)
    };
    fs::write(&dir.join("cgroup.freeze"), value)?;
    let events = dir.join("cgroup.events");
    let want = u64::from(frozen);
    fs::wait_until(dir, wait, || {
        let text = fs::read(&events)?;
        Ok(fs::keyed_u64(&events, &text, "frozen")? == want)
    })
}

/// Kills every process below `dir` (`cgroup.kill`, or freeze and signal on
/// kernels before 5.14) and waits until the cgroup is unpopulated.
pub(crate) fn kill_all(dir: &Path) -> Result<(), CgroupError> {
    if !dir.is_dir() {
        return Ok(());
    }
    let procs = dir.join("cgroup.procs");
    if !fs::write_optional(&dir.join("cgroup.kill"), "1")? {
        let frozen = set_frozen(dir, true);
        for pid in fs::subtree_pids(dir)? {
            fs::kill(&procs, pid)?;
        }
        set_frozen(dir, false)?;
        match frozen {
            Ok(()) | Err(CgroupError::Timeout { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    let events = dir.join("cgroup.events");
    fs::wait_until(dir, Settle::Empty, || {
        let text = fs::read(&events)?;
        if fs::keyed_u64(&events, &text, "populated")? == 0 {
            return Ok(true);
        }
        for pid in fs::subtree_pids(dir)? {
            fs::kill(&procs, pid)?;
        }
        Ok(false)
    })
}

/// Usage counters.
pub(crate) fn stats(dir: &Path) -> Result<CgroupStats, CgroupError> {
    let events_file = dir.join("memory.events");
    let events = fs::read(&events_file)?;
    let cpu_file = dir.join("cpu.stat");
    let cpu = fs::read(&cpu_file)?;
    let peak_file = dir.join("memory.peak");
    let peak = match fs::read_optional(&peak_file)? {
        Some(text) => Some(
            text.trim()
                .parse()
                .map_err(|_| CgroupError::parse(&peak_file, &text))?,
        ),
        None => None,
    };
    Ok(CgroupStats {
        memory_bytes: fs::read_u64(&dir.join("memory.current"))?,
        memory_peak_bytes: peak,
        oom_kills: fs::keyed_u64(&events_file, &events, "oom_kill")?,
        pids: fs::read_u64(&dir.join("pids.current"))?,
        cpu_usage_ns: fs::keyed_u64(&cpu_file, &cpu, "usage_usec")?.saturating_mul(1000),
    })
}

/// Kills everything, then removes the directory tree (missing is fine).
pub(crate) fn destroy(dir: &Path) -> Result<(), CgroupError> {
    // The usual case first: empty and childless, it goes in one call.
    if fs::remove_empty(dir)? {
        return Ok(());
    }
    kill_all(dir)?;
    fs::rmdir_tree(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Freeze, thaw, kill and removal need no controller, so they run on any
    /// unified mount, also on a hybrid host whose controllers are all on v1.
    #[test]
    fn core_operations_on_the_unified_hierarchy() {
        let test = "core_operations_on_the_unified_hierarchy";
        if !rustix::process::geteuid().is_root() {
            println!("SKIP {test}: needs root to create cgroups");
            return;
        }
        let (Ok(mounts), Ok(own)) = (detect::mounts(), detect::memberships()) else {
            println!("SKIP {test}: cannot read this process's cgroups");
            return;
        };
        let Some(dir) = detect::v2_dir(&mounts, &own) else {
            println!("SKIP {test}: no cgroup2 mount");
            return;
        };
        let dir = dir.join(format!("corral-unit-{}", std::process::id()));
        create(&dir, &CgroupLimits::default()).expect("create");
        if !dir.join("cgroup.freeze").exists() {
            destroy(&dir).expect("destroy");
            println!("SKIP {test}: kernel without cgroup.freeze (before 5.2)");
            return;
        }
        let mut child = Command::new("sleep").arg("30").spawn().expect("spawn");
        let result = (|| {
            add_pid(&dir, child.id())?;
            assert_eq!(fs::subtree_pids(&dir)?, vec![child.id()]);
            set_frozen(&dir, true)?;
            set_frozen(&dir, false)?;
            kill_all(&dir)?;
            assert!(fs::subtree_pids(&dir)?.is_empty());
            destroy(&dir)
        })();
        let _ = child.kill();
        let status = child.wait().expect("wait");
        let cleanup = destroy(&dir);
        result.expect("v2 core operations");
        cleanup.expect("destroy");
        assert!(!dir.exists());
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }
}
