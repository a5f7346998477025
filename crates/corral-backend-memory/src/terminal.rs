//! Terminals: a simulated interactive shell over the built-ins, or a
//! command with its stdio on the terminal.
//!
//! The interactive shell prints a `$ ` prompt, reads a line (ended by `\n`,
//! `\r` or `\r\n`), runs it, and prints the next prompt; `exit` or EOF on
//! the input ends it. It does not echo input and does not translate output
//! line endings. `SIGINT` interrupts the running line (`^C`, status 130) and
//! the shell goes on; `SIGTERM`/`SIGKILL` end it. `resize` is recorded and
//! shows up as `COLUMNS`/`LINES` in the next line's environment.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corral_backend::{Result, Terminal, TerminalOps, TerminalSpec};
use tokio::sync::Notify;

use crate::Inner;
use crate::exec::{Launched, launch, spawn_error};
use crate::process::{Control, STREAM_BYTES};
use crate::procs::{Group, lock};
use crate::sandbox::Sandbox;
use crate::shell::io::{Input, Io, Output};
use crate::shell::{Flow, Shell};

/// The prompt.
const PROMPT: &[u8] = b"$ ";

/// One interactive session.
struct Session {
    sb: Arc<Sandbox>,
    master: Arc<Group>,
    groups: Arc<Mutex<Vec<Arc<Group>>>>,
    interrupt: Arc<Notify>,
    size: Arc<Mutex<(u16, u16)>>,
}

impl Session {
    async fn run(self, env: BTreeMap<String, String>, cwd: String, io: Io, pid: u32) -> i32 {
        let mut shell = Shell::new(
            Arc::clone(&self.sb),
            Arc::clone(&self.master),
            env,
            cwd,
            io.clone(),
            pid,
        );
        loop {
            if io.stdout.write(PROMPT).await.is_err() {
                return shell.status;
            }
            let Some(line) = io.stdin.read_tty_line().await else {
                return shell.status;
            };
            let line = String::from_utf8_lossy(&line).into_owned();
            let (cols, rows) = *lock(&self.size);
            shell.vars.insert("COLUMNS".into(), cols.to_string());
            shell.vars.insert("LINES".into(), rows.to_string());
            // Each line is a job of its own: ^C kills it, not the shell.
            let group = self.sb.procs.new_group();
            {
                let mut groups = lock(&self.groups);
                groups.retain(|g| Arc::ptr_eq(g, &self.master) || g.running() > 0);
                groups.push(Arc::clone(&group));
            }
            shell.group = Arc::clone(&group);
            let interrupted = self.interrupt.notified();
            let flow = tokio::select! {
                flow = shell.script(&line) => Some(flow),
                () = interrupted => None,
            };
            match flow {
                Some(Flow::Exit(code)) => return code,
                Some(Flow::Next(code)) => shell.status = code,
                None => {
                    group.kill().await;
                    shell.status = 130;
                    let _ = io.stdout.write(b"^C\n").await;
                }
            }
        }
    }
}

#[async_trait]
impl TerminalOps for Inner {
    async fn open_terminal(&self, id: &str, spec: TerminalSpec) -> Result<Terminal> {
        corral_backend::check_run_as(crate::NAME, &crate::CAPABILITIES, spec.run_as)?;
        let sb = self.sandbox(id)?;
        sb.refuse_paused()?;
        let cwd = sb.resolve_cwd(spec.cwd.as_ref())?;
        let mut env = sb.command_env(&spec.env, &cwd);
        env.entry("TERM".into())
            .or_insert_with(|| "xterm-256color".into());
        env.insert("COLUMNS".into(), spec.cols.to_string());
        env.insert("LINES".into(), spec.rows.to_string());
        let (input_caller, input_term) = tokio::io::duplex(STREAM_BYTES);
        let (output_term, output_caller) = tokio::io::duplex(STREAM_BYTES);
        let out = Output::writer(output_term);
        let io = Io {
            stdin: Input::reader(input_term),
            stdout: out.clone(),
            stderr: out,
        };
        let size = Arc::new(Mutex::new((spec.cols, spec.rows)));
        let control = match spec.command {
            Some(command) => {
                let Launched { group, job } = launch(&sb, command, cwd, env, io)?;
                let groups = Arc::new(Mutex::new(vec![group]));
                let control = Control::new(&job, groups, None, size);
                control.supervise(job);
                control
            }
            None => {
                let master = sb.procs.new_group();
                let groups = Arc::new(Mutex::new(vec![Arc::clone(&master)]));
                let interrupt = Arc::new(Notify::new());
                let session = Session {
                    sb: Arc::clone(&sb),
                    master: Arc::clone(&master),
                    groups: Arc::clone(&groups),
                    interrupt: Arc::clone(&interrupt),
                    size: Arc::clone(&size),
                };
                let job = master
                    .spawn(move |pid| session.run(env, cwd, io, pid))
                    .map_err(spawn_error)?;
                let control = Control::new(&job, groups, Some(interrupt), size);
                control.supervise(job);
                control
            }
        };
        Ok(Terminal {
            input: Box::pin(input_caller),
            output: Box::pin(output_caller),
            control,
        })
    }
}
