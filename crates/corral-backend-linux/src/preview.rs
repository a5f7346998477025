//! Preview URLs: each port declared at create (`CreateRequest::ports`) is
//! reachable from the host as `http://127.0.0.1:<host port>/`.
//!
//! The backend binds one listener per port on the host's loopback (an
//! ephemeral port, so two sandboxes never collide) and hands them to a
//! small forwarder process of the sandbox — the `corral-init` binary run
//! with [`FORWARDER_FLAG`] — which joins the sandbox's network namespace
//! and relays each accepted connection to the sandbox's own
//! `127.0.0.1:PORT` (see [`forwarder`]). It works the same for
//! `network: none` and allowlisted sandboxes and gives neither any way
//! out: connections only ever go from the host in.
//!
//! The record `<sandbox>/preview.json` (ports → host ports, the forwarder's
//! pid and start time) is written before the forwarder starts (without a
//! pid) and again once it runs, and before the sandbox's own record, so
//! every process (`connect`) answers the same URL and a teardown always
//! knows there is a forwarder to stop. The forwarder exits when the
//! sandbox's PID 1 does; `destroy` kills it first, so the host port is
//! closed when `destroy` returns; `gc` kills any whose sandbox is not live.

pub mod forwarder;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use corral_backend::{BackendError, PlatformError, PreviewError, PreviewUrl, RequestError, Result};
use serde::{Deserialize, Serialize};

use crate::hostproc::{Forwarder, kill_all};
use crate::state::{Meta, State, is_sandbox_id, process_start, state_error, write_atomic};

/// The argument that makes `corral-init` the forwarder of a sandbox.
pub const FORWARDER_FLAG: &str = "--preview-forwarder";
/// The name the forwarder runs under (its `argv[0]`).
pub const FORWARDER_NAME: &str = "corral-preview";
/// Most ports one sandbox may publish.
pub const MAX_PORTS: usize = 64;
/// The record of a sandbox's previews, in its directory.
const RECORD: &str = "preview.json";
/// How long the forwarder may take to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a killed forwarder gets to disappear.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// What `<sandbox>/preview.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewRecord {
    /// Sandbox port → host port on 127.0.0.1.
    pub ports: BTreeMap<u16, u16>,
    /// The forwarder's host pid and start time, once it runs.
    pub forwarder: Option<(u32, u64)>,
}

/// Runs the forwarder when this process was started as one; `None` when
/// it was not (then it is `corral-init` proper). For `corral-init`'s `main`.
pub fn forwarder_main() -> Option<i32> {
    // Read as the OS gives them: an argument that is not UTF-8 (a reaper's
    // entry under such a state directory) must not panic here, before the
    // reaper or the init proper gets to read it.
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(std::ffi::OsStr::new(FORWARDER_FLAG)) {
        return None;
    }
    let args: Result<Vec<String>, _> = std::env::args_os().map(|a| a.into_string()).collect();
    Some(match args {
        Ok(args) => forwarder::main(&args),
        Err(bad) => {
            eprintln!("corral-init: a forwarder argument is not UTF-8: {bad:?}");
            2
        }
    })
}

/// Publishes `ports` of the sandbox in `dir` (PID 1 `init_pid`, started at
/// `init_start`): binds the host listeners, records them, starts the
/// forwarder and waits for it to serve. Nothing to do without ports.
/// Whatever was made is removed by [`teardown`], also after a failure here.
pub fn publish(dir: &Path, init_pid: u32, init_start: u64, ports: &[u16]) -> Result<()> {
    let ports: BTreeSet<u16> = ports.iter().copied().collect();
    if ports.is_empty() {
        return Ok(());
    }
    if ports.len() > MAX_PORTS {
        return Err(RequestError::TooManyPorts {
            count: ports.len(),
            max: MAX_PORTS,
        }
        .into());
    }
    let fail = |what: &str, e: &std::io::Error| {
        BackendError::from(PreviewError::ForwarderFailed {
            detail: format!("{what}: {e}"),
        })
    };
    let mut listeners = Vec::with_capacity(ports.len());
    let mut record = PreviewRecord {
        ports: BTreeMap::new(),
        forwarder: None,
    };
    for port in &ports {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| fail("binding a host port", &e))?;
        let host = l
            .local_addr()
            .map_err(|e| fail("reading a host port", &e))?
            .port();
        record.ports.insert(*port, host);
        listeners.push(l);
    }
    write_record(dir, &record)?;
    let binary = crate::spawn::init_binary().ok_or_else(|| PreviewError::ForwarderFailed {
        detail: "the corral-init binary (which forwards preview ports) was not found (set \
                     CORRAL_INIT)"
            .into(),
    })?;
    let mut cmd = std::process::Command::new(&binary);
    cmd.arg0(FORWARDER_NAME)
        .arg(FORWARDER_FLAG)
        .arg(dir)
        .arg(init_pid.to_string())
        .arg(init_start.to_string())
        .args(ports.iter().map(u16::to_string))
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let sources: Vec<_> = listeners.iter().map(AsFd::as_fd).collect();
    let spawned = crate::sys::before_exec::spawn_detached_with_descriptors::<MAX_PORTS>(
        &mut cmd,
        &sources,
        forwarder::FIRST_FD,
    );
    drop(sources);
    let mut child =
        spawned.map_err(|e| fail(&format!("starting the forwarder {}", binary.display()), &e))?;
    drop(listeners);
    let pid = child.id();
    let stdout = child.stdout.take();
    // Reaped whenever it exits (a forwarder outliving this process is
    // reaped by whoever inherits it).
    let _ = std::thread::Builder::new()
        .name("corral-preview-reaper".into())
        .spawn(move || {
            let _ = child.wait();
        });
    // The start time is fixed at fork: read now, it names this forwarder
    // even if it already failed (then it is a zombie and reads as gone).
    if let Some(start) = process_start(pid) {
        record.forwarder = Some((pid, start));
        write_record(dir, &record)?;
    }
    let line = stdout
        .map(|s| first_line(s, READY_TIMEOUT))
        .unwrap_or_default();
    if line != "ready" {
        let why = if line.is_empty() {
            "it exited without a word".to_string()
        } else {
            line
        };
        return Err(PreviewError::ForwarderFailed {
            detail: format!("the forwarder failed: {why}"),
        }
        .into());
    }
    if record.forwarder.is_none() {
        return Err(PreviewError::ForwarderFailed {
            detail: format!("the forwarder ({pid}) vanished right after start"),
        }
        .into());
    }
    Ok(())
}

/// The first line `out` writes within `limit` (empty at EOF or timeout).
fn first_line(out: std::process::ChildStdout, limit: Duration) -> String {
    let mut fds = [rustix::event::PollFd::new(
        &out,
        rustix::event::PollFlags::IN,
    )];
    let ts = rustix::event::Timespec {
        tv_sec: limit.as_secs() as i64,
        tv_nsec: 0,
    };
    if !matches!(rustix::event::poll(&mut fds, Some(&ts)), Ok(n) if n > 0) {
        return String::new();
    }
    let mut line = String::new();
    let _ = BufReader::new(out).read_line(&mut line);
    line.trim().to_string()
}

fn write_record(dir: &Path, record: &PreviewRecord) -> Result<()> {
    let bytes = serde_json::to_vec(record).map_err(|e| PlatformError::Defective {
        what: format!("encoding the preview record: {e}"),
    })?;
    write_atomic(&dir.join(RECORD), &bytes)
        .map_err(|e| state_error("writing the preview record", &e))
}

fn read_record(dir: &Path) -> Option<PreviewRecord> {
    let bytes = std::fs::read(dir.join(RECORD)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The published ports of the sandbox in `dir`: sandbox port → host port
/// on 127.0.0.1 (empty without previews).
pub fn host_ports(dir: &Path) -> BTreeMap<u16, u16> {
    read_record(dir).map(|r| r.ports).unwrap_or_default()
}

/// The URL of `port` of live sandbox `meta`: `not_found` for a port not
/// declared at create (as every backend answers), `unavailable` when its
/// forwarder is gone.
pub fn url(state: &State, meta: &Meta, port: u16) -> Result<PreviewUrl> {
    let record = read_record(&state.sandbox_dir(&meta.id));
    let declared = || {
        record
            .as_ref()
            .map(|r| r.ports.keys().copied().collect())
            .unwrap_or_default()
    };
    let Some(host) = record.as_ref().and_then(|r| r.ports.get(&port)) else {
        return Err(PreviewError::PortNotDeclared {
            id: meta.id.clone(),
            port,
            declared: declared(),
        }
        .into());
    };
    let alive = record
        .as_ref()
        .and_then(|r| r.forwarder)
        .is_some_and(|(pid, start)| process_start(pid) == Some(start));
    if !alive {
        return Err(PreviewError::ForwarderGone {
            id: meta.id.clone(),
        }
        .into());
    }
    Ok(PreviewUrl {
        url: format!("http://127.0.0.1:{host}/"),
        headers: BTreeMap::new(),
        expires_at_ms: meta.expires_at_ms,
    })
}

/// Stops the forwarder of the sandbox in `dir` and waits until it is gone
/// (its host ports are closed then). Idempotent; a sandbox without
/// previews has nothing to stop.
pub fn teardown(dir: &Path) -> Result<()> {
    let path = dir.join(RECORD);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    let procs: Vec<(u32, u64)> = match read_record(dir).and_then(|r| r.forwarder) {
        Some(p) => vec![p],
        // Recorded before the forwarder started: find it by what it is.
        None => forwarders()
            .into_iter()
            .filter(|f| f.dir == dir)
            .map(|f| (f.pid, f.start))
            .collect(),
    };
    kill_all(&procs, KILL_WAIT);
    if let Some((pid, _)) = procs
        .iter()
        .find(|(pid, start)| process_start(*pid) == Some(*start))
    {
        return Err(PreviewError::ForwarderUnkillable {
            pid: *pid,
            within: KILL_WAIT,
        }
        .into());
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(state_error("removing the preview record", &e)),
    }
}

/// The forwarders among `forwarders` that serve a sandbox of `sandboxes`
/// not in `live` (for `gc`, which kills them), as `(pid, start)`.
pub(crate) fn orphans(
    forwarders: &[Forwarder],
    sandboxes: &Path,
    live: &BTreeSet<String>,
) -> Vec<(u32, u64)> {
    forwarders
        .iter()
        .filter(|f| f.dir.parent() == Some(sandboxes))
        .filter(|f| {
            f.dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|id| !is_sandbox_id(id) || !live.contains(id))
        })
        .map(|f| (f.pid, f.start))
        .collect()
}

/// Every forwarder process on this host (by its `argv[0]` and flag).
pub(crate) fn forwarders() -> Vec<Forwarder> {
    let mut out = Vec::new();
    for pid in crate::hostproc::pids() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|&b| b == 0);
        if args.next() != Some(FORWARDER_NAME.as_bytes())
            || args.next() != Some(FORWARDER_FLAG.as_bytes())
        {
            continue;
        }
        let Some(dir) = args.next().and_then(|d| std::str::from_utf8(d).ok()) else {
            continue;
        };
        if let Some(start) = process_start(pid) {
            out.push(Forwarder {
                pid,
                start,
                dir: dir.into(),
            });
        }
    }
    out
}
