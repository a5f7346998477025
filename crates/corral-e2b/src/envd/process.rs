//! `process.Process`: `Start` (a stream of start, data, keepalive and end
//! events; with a `pty`, on a terminal: see [`super::pty`]), `Connect`
//! (the same stream of a running process, from the moment it attaches),
//! `List`, `SendSignal`, `SendInput` and `CloseStdin`.
//!
//! Commands run as the user asked for (`Authorization: Basic`): `root` as
//! root, `user` as the sandbox's unprivileged user where the backend
//! declares `run_as_user`, else as the backend's default, root (see
//! `docs/e2b.md`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use corral_backend::{Command, ControlSignal, Environment, ProcessSpec, TerminalSpec};
use hyper::Request;
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::connect::{deadline, end_of_stream, keepalive, message, single_message};
use super::live::{self, Event, Events, LiveEntry, Streams};
use super::pty::{PtyBody, PtySize, terminals};
use super::rpc::{MAX_RPC_BYTES, Rpc, decode};
use super::{EnvdUser, authorized, resolve};
use crate::body::read_body;
use crate::error::{E2bError, E2bResult};
use crate::state::Record;
use crate::{Inner, USER_HOME};

/// `ProcessConfig`.
#[derive(Debug, Deserialize)]
struct ProcessConfig {
    cmd: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    envs: BTreeMap<String, String>,
    cwd: Option<String>,
}

/// `StartRequest`.
#[derive(Debug, Deserialize)]
struct StartRequest {
    process: ProcessConfig,
    pty: Option<PtyBody>,
    tag: Option<String>,
    #[serde(default)]
    stdin: bool,
}

/// `ProcessSelector`.
#[derive(Debug, Deserialize)]
pub struct Selector {
    pid: Option<u32>,
    tag: Option<String>,
}

/// `ConnectRequest`.
#[derive(Debug, Deserialize)]
struct ConnectRequest {
    process: Selector,
}

/// A request naming one process (`SendSignal`, `SendInput`, `CloseStdin`).
#[derive(Debug, Deserialize)]
pub struct Selected {
    process: Selector,
    signal: Option<String>,
    input: Option<Input>,
}

/// `ProcessInput`.
#[derive(Debug, Deserialize)]
struct Input {
    stdin: Option<String>,
    pty: Option<String>,
}

/// Starts a process and streams its events into `tx`.
pub async fn start(
    inner: &Arc<Inner>,
    req: Request<Incoming>,
    tx: mpsc::Sender<Bytes>,
) -> E2bResult<()> {
    let record = authorized(inner, &req)?;
    let user = EnvdUser::of(&req)?;
    let deadline = deadline(&req)?;
    let keepalive = keepalive(&req)?;
    let body = read_body(req, MAX_RPC_BYTES).await?;
    let start: StartRequest = decode(Rpc::Start, single_message(&body)?)?;
    let pty = match &start.pty {
        Some(pty) => Some((terminals(inner)?, PtySize::of("pty", Some(pty))?)),
        None => None,
    };
    let cwd = match &start.process.cwd {
        Some(dir) if !dir.is_empty() => resolve("process.cwd", dir)?,
        _ => resolve("process.cwd", USER_HOME)?,
    };
    let config = json!({
        "cmd": start.process.cmd, "args": start.process.args,
        "envs": start.process.envs, "cwd": cwd.as_str(),
    });
    // Made here, once: the backend takes the environment as it is.
    let env = Environment::try_from(start.process.envs)
        .map_err(|e| E2bError::invalid("process.envs", e.to_string()))?;
    let mut argv = vec![start.process.cmd];
    argv.extend(start.process.args);
    let command = Command::argv(argv).map_err(|e| E2bError::invalid("process", e.to_string()))?;
    let run_as = user.run_as(&inner.backend.capabilities());
    let process: Streams = match pty {
        Some((terminals, size)) => {
            let spec = TerminalSpec {
                command: Some(command),
                cwd: Some(cwd),
                cols: size.cols,
                rows: size.rows,
                env,
                run_as,
            };
            terminals.open_terminal(&record.id, spec).await?.into()
        }
        None => {
            let Some(ops) = inner.backend.process_ops() else {
                return Err(E2bError::NotServed {
                    what: format!("live processes on the {} backend", inner.backend.name()),
                });
            };
            let spec = ProcessSpec {
                command,
                cwd: Some(cwd),
                env,
                run_as,
            };
            ops.start_process(&record.id, spec).await?.into()
        }
    };
    let control = process.control();
    let pid = control.pid().unwrap_or_else(|| record.fresh_pid());
    let events = live::spawn(&record, pid, start.tag, config, process, start.stdin);
    tokio::spawn(stream(tx, pid, events, keepalive, deadline, Some(control)));
    Ok(())
}

/// Attaches to a running process (by pid or tag) and streams into `tx`
/// what it does from now on, as `Start` does. The deadline ends only this
/// stream: the process, started by another call, goes on.
pub async fn connect(
    inner: &Arc<Inner>,
    req: Request<Incoming>,
    tx: mpsc::Sender<Bytes>,
) -> E2bResult<()> {
    let record = authorized(inner, &req)?;
    let deadline = deadline(&req)?;
    let keepalive = keepalive(&req)?;
    let body = read_body(req, MAX_RPC_BYTES).await?;
    let connect: ConnectRequest = decode(Rpc::Connect, single_message(&body)?)?;
    let (pid, events) = {
        let processes = record.processes();
        let entry = find(&processes, &connect.process)?;
        (entry.pid, entry.attach())
    };
    tokio::spawn(stream(tx, pid, events, keepalive, deadline, None));
    Ok(())
}

/// Writes the start event, then each event as it comes, keepalives
/// between, and the end of the stream; at the deadline the process is
/// killed (when `control` is given) and the stream ends with
/// `deadline_exceeded`. A client that goes away ends only the stream.
async fn stream(
    tx: mpsc::Sender<Bytes>,
    pid: u32,
    mut events: Events,
    keepalive: Option<std::time::Duration>,
    deadline: Option<std::time::Duration>,
    control: Option<Arc<dyn corral_backend::ProcessControl>>,
) {
    let frame = |event: Value| message(&json!({ "event": event }));
    if tx
        .send(frame(json!({ "start": { "pid": pid } })))
        .await
        .is_err()
    {
        return;
    }
    let ping = keepalive.unwrap_or(std::time::Duration::from_secs(3600 * 24));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
    let until =
        tokio::time::sleep(deadline.unwrap_or(std::time::Duration::from_secs(u32::MAX.into())));
    tokio::pin!(until);
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Err(e)) => {
                    let _ = tx.send(end_of_stream(Some(&e))).await;
                    return;
                }
                Some(Ok(event)) => {
                    let end = matches!(event, Event::End(_));
                    if tx.send(frame(event.to_json())).await.is_err() {
                        return;
                    }
                    if end {
                        let _ = tx.send(end_of_stream(None)).await;
                        return;
                    }
                }
                None => {
                    let _ = tx.send(end_of_stream(None)).await;
                    return;
                }
            },
            _ = ticker.tick(), if keepalive.is_some() => {
                if tx.send(frame(json!({ "keepalive": {} }))).await.is_err() {
                    return;
                }
            }
            () = &mut until => {
                if let Some(control) = &control {
                    let _ = control.kill().await;
                }
                let error = E2bError::Backend(
                    corral_backend::ExecError::TimedOut {
                        after: deadline.unwrap_or_default(),
                        limit: corral_backend::TimeoutLimit::Requested,
                    }
                    .into(),
                );
                let _ = tx.send(end_of_stream(Some(&error))).await;
                return;
            }
        }
    }
}

/// `List`: the live processes.
pub fn list(record: &Record) -> Value {
    let processes: Vec<Value> = record
        .processes()
        .values()
        .map(|p| {
            let mut v = json!({ "config": p.config, "pid": p.pid });
            if let Some(tag) = &p.tag {
                v["tag"] = json!(tag);
            }
            v
        })
        .collect();
    json!({ "processes": processes })
}

/// The live process `selector` names in `record`.
pub(super) fn select(record: &Record, selector: &Selector) -> E2bResult<Arc<LiveEntry>> {
    find(&record.processes(), selector)
}

/// The process `selector` names among `processes`.
fn find(
    processes: &BTreeMap<u32, Arc<LiveEntry>>,
    selector: &Selector,
) -> E2bResult<Arc<LiveEntry>> {
    let found = match (selector.pid, &selector.tag) {
        (Some(pid), _) => processes.get(&pid).cloned(),
        (None, Some(tag)) => processes
            .values()
            .find(|p| p.tag.as_ref() == Some(tag))
            .cloned(),
        (None, None) => return Err(E2bError::invalid("process", "names no pid and no tag")),
    };
    found.ok_or_else(|| E2bError::NoProcess {
        selector: selector
            .pid
            .map(|p| format!("pid {p}"))
            .or_else(|| selector.tag.as_ref().map(|t| format!("tag {t:?}")))
            .unwrap_or_default(),
    })
}

/// `SendSignal`: `SIGNAL_SIGTERM` or `SIGNAL_SIGKILL` to the process's group.
pub async fn send_signal(record: &Record, req: &Selected) -> E2bResult<Value> {
    let entry = select(record, &req.process)?;
    match req.signal.as_deref() {
        Some("SIGNAL_SIGKILL") | Some("9") => entry.control.kill().await?,
        Some("SIGNAL_SIGTERM") | Some("15") => entry.control.signal(ControlSignal::Sigterm).await?,
        other => {
            return Err(E2bError::invalid(
                "signal",
                format!("{other:?} is not SIGNAL_SIGTERM or SIGNAL_SIGKILL"),
            ));
        }
    }
    Ok(json!({}))
}

/// `SendInput`: bytes to the process's stdin (`input.stdin`), or
/// keystrokes to its terminal (`input.pty`); each only to a process of
/// its kind.
pub async fn send_input(record: &Record, req: &Selected) -> E2bResult<Value> {
    let entry = select(record, &req.process)?;
    let Some(input) = &req.input else {
        return Err(E2bError::invalid("input", "is missing"));
    };
    let on_terminal = entry.terminal.is_some();
    let (field, encoded) = match (&input.pty, &input.stdin) {
        (Some(_), _) if !on_terminal => {
            return Err(E2bError::NoTerminal {
                pid: entry.pid,
                call: "SendInput's input.pty",
            });
        }
        (Some(keys), _) => ("input.pty", keys.as_str()),
        (None, _) if on_terminal => {
            return Err(E2bError::OnTerminal {
                pid: entry.pid,
                call: "SendInput's input.stdin",
            });
        }
        (None, stdin) => ("input.stdin", stdin.as_deref().unwrap_or("")),
    };
    let bytes = corral_contract::base64_decode(encoded)
        .map_err(|_| E2bError::invalid(field, "is not base64"))?;
    let mut stdin = entry.stdin.lock().await;
    let Some(w) = stdin.as_mut() else {
        return Err(E2bError::invalid(field, "the process's input is closed"));
    };
    w.write_all(&bytes)
        .await
        .map_err(|e| E2bError::invalid(field, e.to_string()))?;
    let _ = w.flush().await;
    Ok(json!({}))
}

/// `CloseStdin`: the process sees EOF. Not for a process on a terminal
/// (envd's rule: its EOF is a Ctrl-D sent as input).
pub async fn close_stdin(record: &Record, req: &Selected) -> E2bResult<Value> {
    let entry = select(record, &req.process)?;
    if entry.terminal.is_some() {
        return Err(E2bError::OnTerminal {
            pid: entry.pid,
            call: "CloseStdin",
        });
    }
    live::close_stdin(&entry).await;
    Ok(json!({}))
}
