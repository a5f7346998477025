//! Facts about the host the bench ran on, and the few host readings the
//! measures need (resident set size, effective uid, programs on `PATH`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The machine a report was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// The kernel release (`uname -r`), or `unknown`.
    pub kernel: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// Total memory in bytes (`MemTotal`), when readable.
    pub memory_bytes: Option<u64>,
    /// Whether the bench ran as root (effective uid 0).
    pub root: bool,
    /// The corral version that measured.
    pub corral_version: String,
    /// When the report was made, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
}

impl Host {
    /// Reads the facts of this host, now.
    pub fn current() -> Self {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        Host {
            kernel,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            memory_bytes: proc_kib("/proc/meminfo", "MemTotal:").map(|k| k * 1024),
            root: effective_uid() == Some(0),
            corral_version: env!("CARGO_PKG_VERSION").into(),
            date: utc_date(SystemTime::now()),
        }
    }
}

/// This process's resident set size in bytes (`VmRSS`).
pub fn rss_bytes() -> Option<u64> {
    proc_kib("/proc/self/status", "VmRSS:").map(|k| k * 1024)
}

/// The summed proportional set size (`Pss` of `/proc/<pid>/smaps_rollup`)
/// of every process descended from this one — a backend's helpers and
/// sandbox inits — and how many there are; `None` where the kernel offers
/// no `smaps_rollup`. A process that exits during the walk is skipped.
pub fn descendants_pss_bytes() -> Option<(u64, usize)> {
    std::fs::metadata("/proc/self/smaps_rollup").ok()?;
    let me = std::process::id();
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the comm may hold spaces and ')'.
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let (mut total, mut count) = (0u64, 0usize);
    let mut queue = children.remove(&me).unwrap_or_default();
    while let Some(pid) = queue.pop() {
        queue.extend(children.remove(&pid).unwrap_or_default());
        if let Some(kib) = proc_kib(&format!("/proc/{pid}/smaps_rollup"), "Pss:") {
            total += kib * 1024;
            count += 1;
        }
    }
    Some((total, count))
}

/// This process's effective uid, from `/proc/self/status`.
pub fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The executable `name` would run as: itself when it holds a `/`, else the
/// first executable file of that name on `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = Path::new(name);
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The number after `key` in a `/proc` file of `key value kB` lines.
fn proc_kib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_are_utc_iso_8601() {
        assert_eq!(utc_date(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723);
        assert_eq!(utc_date(t), "2000-02-29T01:02:03Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_798_761_599);
        assert_eq!(utc_date(t), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn this_host_reports_its_facts() {
        let h = Host::current();
        assert!(h.cores >= 1);
        assert!(!h.kernel.is_empty());
        assert!(rss_bytes().is_some_and(|r| r > 0));
        assert!(find_program("sh").is_some());
        assert!(find_program("/nonexistent/corral-bench-none").is_none());
    }

    #[test]
    fn descendants_pss_counts_a_child_and_its_child() {
        let Some((before, _)) = descendants_pss_bytes() else {
            eprintln!("skip: this kernel has no /proc/<pid>/smaps_rollup");
            return;
        };
        // A shell with a background sleep: a child and a grandchild. When
        // its stdin closes the shell ends the sleep (by its pid) and exits.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & read _a; kill $!; wait"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut seen = None;
        while std::time::Instant::now() < deadline {
            seen = descendants_pss_bytes().filter(|(_, n)| *n >= 2);
            if seen.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(child.stdin.take());
        let _ = child.wait();
        let (after, count) = seen.expect("the shell and its sleep are found");
        assert!(count >= 2, "{count} descendants");
        assert!(after > before, "their PSS adds up: {before} -> {after}");
    }
}
