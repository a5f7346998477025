//! `open_terminal`: a program on a new terminal of the sandbox's own
//! `devpts` instance. PID 1 opens the terminal inside the sandbox, makes it
//! the program's controlling terminal in a new session, and hands the
//! master side to the host, which writes keystrokes to it, reads what the
//! terminal shows, and sets its window size.

use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use corral_backend::{
    BackendError, ControlSignal, ExecError, ExitStatus, ProcessControl, Result, Terminal,
    TerminalControl, TerminalOps, TerminalSpec,
};
use tokio::io::{AsyncRead, ReadBuf};

use crate::exec::{command_env_map, env_lines, request_spawn};
use crate::process::Control;
use crate::protocol::{Request, SpawnUser};
use crate::state::{State, require_meta};

/// The program a terminal runs when the spec names none.
const LOGIN_SHELL: &[&str] = &["sh", "-l"];

/// Terminals of linux sandboxes.
#[derive(Debug)]
pub struct LinuxTerminals {
    pub(crate) state: Arc<State>,
}

struct TermControl {
    control: Control,
    master: OwnedFd,
}

#[async_trait]
impl ProcessControl for TermControl {
    fn pid(&self) -> Option<u32> {
        self.control.pid()
    }
    async fn wait(&self) -> Result<ExitStatus> {
        self.control.wait().await
    }
    async fn signal(&self, signal: ControlSignal) -> Result<()> {
        self.control.signal(signal).await
    }
    async fn kill(&self) -> Result<()> {
        self.control.kill().await
    }
}

#[async_trait]
impl TerminalControl for TermControl {
    async fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        set_size(&self.master, cols, rows)
    }
}

fn set_size(master: &OwnedFd, cols: u16, rows: u16) -> Result<()> {
    let ws = rustix::termios::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(master, ws)
        .map_err(|e| BackendError::from_io("resizing the terminal", &e.into()))
}

/// The master side as a reader: `EIO` (every slave closed) is the end.
struct Output(tokio::fs::File);

impl AsyncRead for Output {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.0).poll_read(cx, buf) {
            Poll::Ready(Err(e)) if e.raw_os_error() == Some(libc::EIO) => Poll::Ready(Ok(())),
            other => other,
        }
    }
}

fn open(state: &State, id: &str, spec: TerminalSpec) -> Result<Terminal> {
    let meta = require_meta(state, id)?;
    let argv = match &spec.command {
        Some(c) => c.to_argv(),
        None => LOGIN_SHELL.iter().map(|s| (*s).to_string()).collect(),
    };
    let user = SpawnUser::from(spec.run_as);
    let mut env = command_env_map(&meta, &spec.env, user);
    if spec.env.get("TERM").is_none() {
        env.insert("TERM".into(), "xterm-256color".into());
    }
    let req = Request::Spawn {
        argv,
        env: env_lines(env),
        cwd: spec
            .cwd
            .as_ref()
            .map_or(user.default_cwd(), |c| c.as_str())
            .to_string(),
        stdin: false,
        tty: true,
        user,
    };
    let (conn, pid, mut fds) = request_spawn(state, id, &req, &[])?;
    let control = Control::watch(conn, id, pid)?;
    let Some(master) = fds.pop() else {
        return Err(ExecError::UnexpectedReply {
            what: format!("sandbox {id}: terminal"),
            detail: "its master side did not arrive".into(),
        }
        .into());
    };
    set_size(&master, spec.cols.max(1), spec.rows.max(1))?;
    let dup = |fd: &OwnedFd| {
        fd.try_clone()
            .map_err(|e| BackendError::from_io("terminal descriptor", &e))
    };
    let input = tokio::fs::File::from_std(std::fs::File::from(dup(&master)?));
    let output = Output(tokio::fs::File::from_std(std::fs::File::from(dup(
        &master,
    )?)));
    Ok(Terminal {
        input: Box::pin(input),
        output: Box::pin(output),
        control: Arc::new(TermControl { control, master }),
    })
}

#[async_trait]
impl TerminalOps for LinuxTerminals {
    async fn open_terminal(&self, id: &str, spec: TerminalSpec) -> Result<Terminal> {
        self.state.check_run_as(spec.run_as)?;
        let (state, id) = (self.state.clone(), id.to_string());
        crate::blocking::blocking(move || open(&state, &id, spec)).await
    }
}
