//! The reaper: a detached process that finishes one entry of `reaping/`
//! (`crate::reaping`) after `destroy` answered, and outlives whoever
//! destroyed — a `corral run` exits right after its answer; a server, an
//! MCP session or an SDK program goes on. One mechanism serves both: the
//! `corral-init` binary (which already forwards preview ports) run as
//! `corral-reaper --reap <entry> [--cgroup <dir>]…`, spawned without any
//! hook between fork and exec (so with `posix_spawn`'s `vfork`-style clone,
//! which copies none of the caller's memory), in a process group of its
//! own (a terminal's `^C` to the caller's group does not reach it), with
//! `/dev/null` as stdio, no other descriptor (it closes any its caller
//! leaked before anything else) and an empty environment; a thread of the
//! caller waits for it, so a long-lived caller keeps no zombie (once the
//! caller exits, whoever inherits the reaper reaps it).
//!
//! It takes the entry's lock without waiting and leaves the entry alone
//! when someone holds it (a gc pass that came first); killed half-way, it
//! leaves an entry whose lock is free, which the next gc pass finishes.
//! It needs no mount table and no cgroup detection: the entry's mount
//! point is known, and the cgroup's directories (emptied before `destroy`
//! answered) are given to it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::host::Host;
use crate::real_host::RealHost;
use crate::state::is_sandbox_id;

/// The flag naming the reaper's mode of the `corral-init` binary.
const FLAG: &str = "--reap";
/// The flag before each cgroup directory to remove.
const CGROUP_FLAG: &str = "--cgroup";
/// What the reaper runs as (its `argv[0]`, so `ps` tells it from an init).
const NAME: &str = "corral-reaper";
/// The directory whose entries a reaper may finish.
const REAPING: &str = "reaping";

/// Starts the reaper of `entry`, which removes `cgroup_dirs` too.
pub(crate) fn start(entry: &Path, cgroup_dirs: &[PathBuf]) -> std::io::Result<()> {
    let binary = crate::spawn::init_binary().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the corral-init binary (which reaps destroyed sandboxes) was not found",
        )
    })?;
    let mut cmd = Command::new(binary);
    cmd.arg0(NAME).arg(FLAG).arg(entry);
    for dir in cgroup_dirs {
        cmd.arg(CGROUP_FLAG).arg(dir);
    }
    cmd.env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn()?;
    // Reaped whenever it exits (one outliving this process is reaped by
    // whoever inherits it).
    let _ = std::thread::Builder::new()
        .name("corral-reaper-wait".into())
        .spawn(move || {
            let _ = child.wait();
        });
    Ok(())
}

/// The reaper's entry point in the `corral-init` binary: `Some(exit code)`
/// when this process was started as a reaper, `None` otherwise.
pub fn reaper_main() -> Option<i32> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != FLAG) {
        return None;
    }
    // First thing, before it opens anything: a descriptor its caller left
    // without close-on-exec (a pipe a shell reads, say) is not kept open
    // for as long as the reaper works.
    let _ = crate::init::sys::above_stderr(crate::init::sys::Sweep::Close);
    Some(run(&args[2..]))
}

/// One entry to finish, as the reaper's arguments name it.
#[derive(Debug, PartialEq, Eq)]
struct Job {
    /// `<state>/linux/reaping/<id>`.
    entry: PathBuf,
    /// The sandbox id (the entry's name).
    id: String,
    /// The cgroup's directories, each named after the id.
    cgroups: Vec<PathBuf>,
}

/// Reads `<entry> [--cgroup <dir>]…`, refusing anything but an absolute
/// entry of a `reaping/` directory named after a sandbox id and absolute
/// cgroup directories named after that same id: whatever it is given, a
/// reaper removes nothing else.
fn parse(args: &[OsString]) -> Result<Job, String> {
    let (entry, rest) = args.split_first().ok_or("no entry to reap")?;
    let entry = PathBuf::from(entry);
    let id = entry
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| is_sandbox_id(n))
        .ok_or_else(|| format!("{}: not a sandbox's entry", entry.display()))?
        .to_string();
    let in_reaping = entry.parent().and_then(Path::file_name) == Some(REAPING.as_ref());
    if !entry.is_absolute() || !in_reaping {
        return Err(format!("{}: not an entry of reaping/", entry.display()));
    }
    let mut cgroups = Vec::new();
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let dir = match (flag == CGROUP_FLAG, rest.next()) {
            (true, Some(dir)) => PathBuf::from(dir),
            _ => return Err(format!("unexpected argument {}", flag.to_string_lossy())),
        };
        if !dir.is_absolute() || dir.file_name() != Some(id.as_ref()) {
            return Err(format!("{}: not the cgroup of {id}", dir.display()));
        }
        cgroups.push(dir);
    }
    Ok(Job { entry, id, cgroups })
}

/// Finishes the entry `args` name: 0 when it is finished (or someone else
/// holds it), 1 when a step failed (the entry is left for gc), 2 on
/// arguments no backend gives.
fn run(args: &[OsString]) -> i32 {
    let job = match parse(args) {
        Ok(job) => job,
        Err(why) => {
            eprintln!("{NAME}: {why}");
            return 2;
        }
    };
    let host = RealHost;
    let _lock = match host.lock_entry(&job.entry) {
        Ok(Some(lock)) => lock,
        // Someone else finishes it (or it is finished).
        Ok(None) => return 0,
        Err(e) => {
            eprintln!("{NAME}: locking {}: {e}", job.entry.display());
            return 1;
        }
    };
    let finished = crate::reaping::finish(
        &host,
        &job.id,
        &job.entry,
        !crate::privilege::rootless(),
        || {
            crate::cgroup::remove_emptied(&job.cgroups)
                .map_err(|e| e.failed(format_args!("removing the cgroup of sandbox {}", job.id)))
        },
    );
    match finished {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments a reaper refuses, one row per attempt to make it remove
    /// something other than a destroyed sandbox's entry and cgroup.
    #[test]
    fn a_reaper_removes_nothing_but_an_entry_and_its_cgroup() {
        let id = "lnx-00000000000000aa";
        let entry = format!("/state/linux/reaping/{id}");
        let cg = format!("/sys/fs/cgroup/pids/corral/{id}");
        let rows: [(&str, Vec<String>, &str); 8] = [
            ("no entry", vec![], "no entry"),
            (
                "a relative entry",
                vec![format!("reaping/{id}")],
                "not an entry",
            ),
            (
                "not in reaping/",
                vec![format!("/state/linux/sandboxes/{id}")],
                "not an entry",
            ),
            (
                "not a sandbox id",
                vec!["/state/linux/reaping/etc".into()],
                "not a sandbox",
            ),
            (
                "a parent step",
                vec!["/state/linux/reaping/..".into()],
                "not a sandbox",
            ),
            (
                "another sandbox's cgroup",
                vec![
                    entry.clone(),
                    "--cgroup".into(),
                    "/sys/fs/cgroup/pids/corral/lnx-00000000000000bb".into(),
                ],
                "not the cgroup",
            ),
            (
                "a relative cgroup",
                vec![entry.clone(), "--cgroup".into(), format!("corral/{id}")],
                "not the cgroup",
            ),
            (
                "a stray argument",
                vec![entry.clone(), cg.clone(), "x".into()],
                "unexpected argument",
            ),
        ];
        for (what, args, refusal) in rows {
            let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
            let err = parse(&args).expect_err(what);
            assert!(err.contains(refusal), "{what}: {err}");
            assert!(!err.contains('\n'), "{what}: one line");
        }
        let args: Vec<OsString> = [entry.clone(), "--cgroup".into(), cg.clone()]
            .into_iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            parse(&args).unwrap(),
            Job {
                entry: PathBuf::from(entry),
                id: id.into(),
                cgroups: vec![PathBuf::from(cg)],
            }
        );
    }
}
