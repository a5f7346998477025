//! Small helpers over cgroupfs files: one read or write per call, errors
//! naming the file, bounded waits.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use super::error::{CgroupError, CgroupOp, Settle};

/// How long freezing, thawing, emptying and removal may take.
pub(crate) const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads a control file.
pub(crate) fn read(path: &Path) -> Result<String, CgroupError> {
    fs::read_to_string(path).map_err(|e| CgroupError::io(CgroupOp::Read, path, &e))
}

/// Reads a control file, `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, CgroupError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CgroupError::io(CgroupOp::Read, path, &e)),
    }
}

/// Writes `value` to a control file in a single `write(2)`.
pub(crate) fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| CgroupError::io(CgroupOp::Write, path, &e))?;
    match file.write(value.as_bytes()) {
        Ok(n) if n == value.len() => Ok(()),
        Ok(_) => Err(CgroupError::Io {
            op: CgroupOp::Write,
            path: path.to_path_buf(),
            errno: libc::EIO,
        }),
        Err(e) => Err(CgroupError::io(CgroupOp::Write, path, &e)),
    }
}

/// Writes a control file that may not exist on this kernel or
/// configuration; `Ok(false)` when it does not.
pub(crate) fn write_optional(path: &Path, value: &str) -> Result<bool, CgroupError> {
    match write(path, value) {
        Ok(()) => Ok(true),
        Err(e) if e.errno() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reads a file holding one unsigned number.
pub(crate) fn read_u64(path: &Path) -> Result<u64, CgroupError> {
    let text = read(path)?;
    text.trim()
        .parse()
        .map_err(|_| CgroupError::parse(path, &text))
}

/// Finds `key value` in a flat-keyed file (`memory.events`, `cpu.stat`,
/// `memory.oom_control`, `cgroup.events`).
pub(crate) fn keyed_u64(path: &Path, text: &str, key: &str) -> Result<u64, CgroupError> {
    text.lines()
        .find_map(|line| {
            let mut parts = line.split_whitespace();
            (parts.next() == Some(key)).then(|| parts.next())
        })
        .flatten()
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| CgroupError::parse(path, text))
}

/// Parses `cgroup.procs`.
pub(crate) fn read_pids(path: &Path) -> Result<Vec<u32>, CgroupError> {
    let text = read(path)?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.trim()
                .parse()
                .map_err(|_| CgroupError::parse(path, &text))
        })
        .collect()
}

/// The subdirectories of `dir`, deepest first, `dir` itself last. A missing
/// `dir` yields nothing.
pub(crate) fn subtree(dir: &Path) -> Result<Vec<PathBuf>, CgroupError> {
    let mut out = Vec::new();
    collect(dir, &mut out)?;
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CgroupError> {
    for child in subdirs(dir)? {
        collect(&child, out)?;
    }
    if dir.is_dir() {
        out.push(dir.to_path_buf());
    }
    Ok(())
}

/// The immediate subdirectories of `dir` (empty when it does not exist).
pub(crate) fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, CgroupError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CgroupError::io(CgroupOp::ReadDir, dir, &e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CgroupError::io(CgroupOp::ReadDir, dir, &e))?;
        let is_dir = entry
            .file_type()
            .map_err(|e| CgroupError::io(CgroupOp::ReadDir, dir, &e))?
            .is_dir();
        if is_dir {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Every process in `dir` and below (empty when `dir` is gone).
pub(crate) fn subtree_pids(dir: &Path) -> Result<Vec<u32>, CgroupError> {
    let mut pids = Vec::new();
    for cgroup in subtree(dir)? {
        match read_pids(&cgroup.join("cgroup.procs")) {
            Ok(found) => pids.extend(found),
            Err(e) if e.errno() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(pids)
}

/// Creates one cgroup directory; `AlreadyExists` when it is there.
pub(crate) fn mkdir(dir: &Path) -> Result<(), CgroupError> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(CgroupError::AlreadyExists {
            path: dir.to_path_buf(),
        }),
        Err(e) => Err(CgroupError::io(CgroupOp::Mkdir, dir, &e)),
    }
}

/// Creates a parent directory and its ancestors, fine when present.
pub(crate) fn mkdir_all(dir: &Path) -> Result<(), CgroupError> {
    fs::create_dir_all(dir).map_err(|e| CgroupError::io(CgroupOp::Mkdir, dir, &e))
}

/// Removes `dir` and every cgroup below it, deepest first, retrying while
/// the kernel still reports it busy. A missing directory is success.
pub(crate) fn rmdir_tree(dir: &Path) -> Result<(), CgroupError> {
    // The usual case first: an empty cgroup with no children goes in one
    // call; anything else (children, a process still leaving) takes the walk.
    if remove_empty(dir)? {
        return Ok(());
    }
    for cgroup in subtree(dir)? {
        rmdir_one(&cgroup)?;
    }
    Ok(())
}

/// Removes `dir` when it is an empty cgroup without children: `Ok(true)`
/// when it is gone (or was), `Ok(false)` when the kernel refused because
/// it is not (busy or not empty).
pub(crate) fn remove_empty(dir: &Path) -> Result<bool, CgroupError> {
    match fs::remove_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::ENOTEMPTY)) => Ok(false),
        Err(e) => Err(CgroupError::io(CgroupOp::Rmdir, dir, &e)),
    }
}

fn rmdir_one(dir: &Path) -> Result<(), CgroupError> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                if started.elapsed() >= SETTLE_TIMEOUT {
                    return Err(CgroupError::Timeout {
                        path: dir.to_path_buf(),
                        wait: Settle::Removed,
                        waited_ms: millis(started.elapsed()),
                    });
                }
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(e) => return Err(CgroupError::io(CgroupOp::Rmdir, dir, &e)),
        }
    }
}

/// Polls `done` until it returns true, at most [`SETTLE_TIMEOUT`].
pub(crate) fn wait_until(
    dir: &Path,
    wait: Settle,
    mut done: impl FnMut() -> Result<bool, CgroupError>,
) -> Result<(), CgroupError> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        if done()? {
            return Ok(());
        }
        if started.elapsed() >= SETTLE_TIMEOUT {
            return Err(CgroupError::Timeout {
                path: dir.to_path_buf(),
                wait,
                waited_ms: millis(started.elapsed()),
            });
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// Sends `SIGKILL` to `pid`; a process that is already gone is fine.
pub(crate) fn kill(procs_file: &Path, pid: u32) -> Result<(), CgroupError> {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(());
    };
    match rustix::process::kill_process(pid, rustix::process::Signal::KILL) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(e) => Err(CgroupError::Io {
            op: CgroupOp::Kill,
            path: procs_file.to_path_buf(),
            errno: e.raw_os_error(),
        }),
    }
}

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}
