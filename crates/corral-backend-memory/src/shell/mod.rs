//! The memory shell: a small, deterministic POSIX-like `sh` over the
//! in-memory tree. Built-in commands run inline in their shell's task;
//! pipeline stages and `&` jobs are tasks of the command's process group.

pub(crate) mod builtins;
mod fsops;
pub(crate) mod io;
mod lex;
pub(crate) mod parse;
mod procops;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use corral_backend::Command;
use tokio::sync::mpsc;

use crate::procs::{Group, Job, SpawnError};
use crate::sandbox::Sandbox;
use io::{Input, Io, Output, PIPE_CHUNKS, WriteError};
use parse::{AndOr, Cmd, Connector, List, Part, Pipeline, Redir, RedirOp, Word};

/// A boxed, sendable future (the shell is recursive).
pub(crate) type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a command list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// It ran to its end with this status.
    Next(i32),
    /// `exit` ran with this status.
    Exit(i32),
}

impl Flow {
    pub(crate) fn code(self) -> i32 {
        match self {
            Flow::Next(c) | Flow::Exit(c) => c,
        }
    }
}

/// One shell: its variables, working directory, positional parameters,
/// streams and background jobs.
pub(crate) struct Shell {
    pub(crate) sb: Arc<Sandbox>,
    pub(crate) group: Arc<Group>,
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) cwd: String,
    /// `$0`, `$1`, …
    pub(crate) args: Vec<String>,
    /// `$?`.
    pub(crate) status: i32,
    pub(crate) io: Io,
    pub(crate) jobs: Vec<Job>,
    /// `$!`.
    pub(crate) last_bg: Option<u32>,
    /// `$$`.
    pub(crate) pid: u32,
    /// `sh -e`.
    pub(crate) errexit: bool,
}

/// The message a failed spawn prints.
pub(crate) fn spawn_message(e: SpawnError) -> String {
    match e {
        SpawnError::Killed => "sh: fork: the process group is being killed\n".into(),
        SpawnError::Limit(n) => {
            format!("sh: fork: Resource temporarily unavailable (limits.pids = {n})\n")
        }
    }
}

impl Shell {
    /// A fresh shell.
    pub(crate) fn new(
        sb: Arc<Sandbox>,
        group: Arc<Group>,
        vars: BTreeMap<String, String>,
        cwd: String,
        io: Io,
        pid: u32,
    ) -> Shell {
        Shell {
            sb,
            group,
            vars,
            cwd,
            args: vec!["sh".into()],
            status: 0,
            io,
            jobs: Vec::new(),
            last_bg: None,
            pid,
            errexit: false,
        }
    }

    /// A subshell: a copy of this shell's state, with its own streams and no jobs.
    pub(crate) fn fork(&self, io: Io) -> Shell {
        Shell {
            sb: Arc::clone(&self.sb),
            group: Arc::clone(&self.group),
            vars: self.vars.clone(),
            cwd: self.cwd.clone(),
            args: self.args.clone(),
            status: self.status,
            io,
            jobs: Vec::new(),
            last_bg: self.last_bg,
            pid: self.pid,
            errexit: self.errexit,
        }
    }

    /// Runs what an exec, a process or a terminal was asked to run.
    pub(crate) async fn run_top(mut self, command: &Command) -> i32 {
        let io = self.io.clone();
        match command {
            Command::Argv(argv) => builtins::run(&mut self, argv.as_slice().to_vec(), &io)
                .await
                .code(),
            Command::Shell(script) => self.script(script.as_str()).await.code(),
        }
    }

    /// Parses and runs a script; a syntax error is status 2.
    pub(crate) fn script<'a>(&'a mut self, src: &'a str) -> BoxFut<'a, Flow> {
        Box::pin(async move {
            match parse::parse(src) {
                Ok(list) => self.list(&list).await,
                Err(msg) => {
                    let io = self.io.clone();
                    self.err(&io, &format!("sh: {msg}\n")).await;
                    self.status = 2;
                    Flow::Next(2)
                }
            }
        })
    }

    /// Writes to `io`'s stdout; `Err(status)` when the command must stop.
    pub(crate) async fn out(&self, io: &Io, bytes: &[u8]) -> Result<(), i32> {
        self.sb.wait_unpaused().await;
        match io.stdout.write(bytes).await {
            Ok(()) => Ok(()),
            Err(WriteError::BrokenPipe) => Err(141),
            Err(WriteError::Fs(e)) => {
                self.err(io, &format!("sh: write error: {}\n", e.strerror()))
                    .await;
                Err(1)
            }
        }
    }

    /// Writes a diagnostic to `io`'s stderr (errors ignored).
    pub(crate) async fn err(&self, io: &Io, msg: &str) {
        self.sb.wait_unpaused().await;
        let _ = io.stderr.write(msg.as_bytes()).await;
    }

    /// The components of `path`, relative to the working directory.
    pub(crate) fn path(&self, path: &str) -> Result<Vec<String>, &'static str> {
        if path.is_empty() {
            return Err("No such file or directory");
        }
        let abs = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{}/{path}", self.cwd)
        };
        crate::tree::comps_of("path", &abs).map_err(|_| "Invalid argument")
    }

    fn param(&self, name: &str) -> Vec<String> {
        let one = |s: String| vec![s];
        match name {
            "?" => one(self.status.to_string()),
            "#" => one(self.args.len().saturating_sub(1).to_string()),
            "$" => one(self.pid.to_string()),
            "!" => one(self.last_bg.map(|p| p.to_string()).unwrap_or_default()),
            "@" | "*" => self.args.iter().skip(1).cloned().collect(),
            n if n.chars().all(|c| c.is_ascii_digit()) => one(n
                .parse::<usize>()
                .ok()
                .and_then(|i| self.args.get(i).cloned())
                .unwrap_or_default()),
            n => one(self.vars.get(n).cloned().unwrap_or_default()),
        }
    }

    /// Expands a word into fields: parameters outside quotes are split on
    /// blanks, quoted text never is. No pathname expansion.
    pub(crate) fn expand(&self, w: &Word) -> Vec<String> {
        let mut fields = Vec::new();
        let mut cur: Option<String> = None;
        for part in &w.0 {
            match part {
                Part::Lit(s) | Part::Quoted(s) => cur.get_or_insert_default().push_str(s),
                Part::QuotedParam(n) if n == "@" => {
                    let vals = self.param(n);
                    let count = vals.len();
                    for (i, v) in vals.into_iter().enumerate() {
                        cur.get_or_insert_default().push_str(&v);
                        if i + 1 < count {
                            fields.extend(cur.take());
                        }
                    }
                }
                Part::QuotedParam(n) => {
                    let v = self.param(n).join(" ");
                    cur.get_or_insert_default().push_str(&v);
                }
                Part::Param(n) => {
                    let v = self.param(n).join(" ");
                    if v.starts_with(char::is_whitespace) {
                        fields.extend(cur.take());
                    }
                    for (i, piece) in v.split_whitespace().enumerate() {
                        if i > 0 {
                            fields.extend(cur.take());
                        }
                        cur.get_or_insert_default().push_str(piece);
                    }
                    if v.ends_with(char::is_whitespace) {
                        fields.extend(cur.take());
                    }
                }
            }
        }
        fields.extend(cur);
        fields
    }

    /// Expands a word into one string, unsplit (assignments, redirection targets).
    pub(crate) fn expand_one(&self, w: &Word) -> String {
        let mut s = String::new();
        for part in &w.0 {
            match part {
                Part::Lit(t) | Part::Quoted(t) => s.push_str(t),
                Part::Param(n) | Part::QuotedParam(n) => s.push_str(&self.param(n).join(" ")),
            }
        }
        s
    }

    fn open_out(&self, io: &Io, target: &str, append: bool) -> Result<Output, String> {
        match target {
            "/dev/null" => return Ok(Output::Null),
            "/dev/stdout" => return Ok(io.stdout.clone()),
            "/dev/stderr" => return Ok(io.stderr.clone()),
            _ => {}
        }
        let fail = |e: &str| format!("sh: cannot create {target}: {e}");
        let comps = self.path(target).map_err(fail)?;
        let canon = self
            .sb
            .tree()
            .resolve(&comps, true)
            .map_err(|e| fail(e.strerror()))?;
        self.sb
            .write_file(&canon, b"", None, append)
            .map_err(|e| fail(e.strerror()))?;
        Ok(Output::File(Arc::clone(&self.sb), canon))
    }

    fn open_in(&self, io: &Io, target: &str) -> Result<Input, String> {
        match target {
            "/dev/null" => return Ok(Input::closed()),
            "/dev/stdin" => return Ok(io.stdin.clone()),
            _ => {}
        }
        let fail = |e: &str| format!("sh: cannot open {target}: {e}");
        let comps = self.path(target).map_err(fail)?;
        let bytes = self
            .sb
            .tree()
            .read(&comps)
            .map_err(|e| fail(e.strerror()))?
            .to_vec();
        Ok(Input::bytes(bytes))
    }

    fn apply_redirs(&self, redirs: &[Redir], io: &mut Io) -> Result<(), String> {
        for r in redirs {
            let target = self.expand_one(&r.target);
            let out = match r.op {
                RedirOp::In => {
                    if r.fd != 0 {
                        return Err(format!("sh: {}: bad file descriptor", r.fd));
                    }
                    io.stdin = self.open_in(io, &target)?;
                    continue;
                }
                RedirOp::DupIn => {
                    if r.fd != 0 || target != "0" {
                        return Err(format!("sh: {target}: bad file descriptor"));
                    }
                    continue;
                }
                RedirOp::Out | RedirOp::Append => {
                    self.open_out(io, &target, r.op == RedirOp::Append)?
                }
                RedirOp::DupOut => match target.as_str() {
                    "1" => io.stdout.clone(),
                    "2" => io.stderr.clone(),
                    "-" => Output::Null,
                    _ => return Err(format!("sh: {target}: bad file descriptor")),
                },
            };
            match r.fd {
                1 => io.stdout = out,
                2 => io.stderr = out,
                fd => return Err(format!("sh: {fd}: bad file descriptor")),
            }
        }
        Ok(())
    }

    /// Runs a command list.
    pub(crate) fn list<'a>(&'a mut self, list: &'a List) -> BoxFut<'a, Flow> {
        Box::pin(async move {
            for item in &list.0 {
                if item.background {
                    self.background(&item.and_or).await;
                    continue;
                }
                let (flow, checked) = self.and_or(&item.and_or).await;
                match flow {
                    Flow::Exit(c) => return Flow::Exit(c),
                    Flow::Next(c) => self.status = c,
                }
                if self.errexit && checked && self.status != 0 {
                    return Flow::Exit(self.status);
                }
            }
            Flow::Next(self.status)
        })
    }

    /// Starts an and-or list as a background job (stdin from `/dev/null`).
    async fn background(&mut self, ao: &AndOr) {
        let mut child = self.fork(Io {
            stdin: Input::closed(),
            ..self.io.clone()
        });
        child.errexit = false;
        let ao = ao.clone();
        match self
            .group
            .spawn(move |_| async move { child.and_or(&ao).await.0.code() })
        {
            Ok(job) => {
                self.last_bg = Some(job.pid);
                self.jobs.push(job);
                self.status = 0;
            }
            Err(e) => {
                let io = self.io.clone();
                self.err(&io, &spawn_message(e)).await;
                self.status = 2;
            }
        }
    }

    /// Runs an and-or list; also says whether `sh -e` applies to its status
    /// (its last pipeline ran and was not negated).
    fn and_or<'a>(&'a mut self, ao: &'a AndOr) -> BoxFut<'a, (Flow, bool)> {
        Box::pin(async move {
            let mut flow = self.pipeline(&ao.first).await;
            let mut checked = ao.rest.is_empty() && !ao.first.negate;
            for (conn, p) in &ao.rest {
                if let Flow::Exit(_) = flow {
                    break;
                }
                self.status = flow.code();
                let run = match conn {
                    Connector::And => self.status == 0,
                    Connector::Or => self.status != 0,
                };
                if run {
                    flow = self.pipeline(p).await;
                    checked = !p.negate;
                } else {
                    checked = false;
                }
            }
            if let Flow::Next(c) = flow {
                self.status = c;
            }
            (flow, checked)
        })
    }

    async fn pipeline(&mut self, p: &Pipeline) -> Flow {
        let flow = if let [cmd] = p.cmds.as_slice() {
            match self.command(cmd).await {
                Flow::Exit(c) => return Flow::Exit(c),
                f => f,
            }
        } else {
            Flow::Next(self.stages(&p.cmds).await)
        };
        match (p.negate, flow) {
            (true, Flow::Next(c)) => Flow::Next(i32::from(c == 0)),
            (_, f) => f,
        }
    }

    /// Runs the stages of a pipeline concurrently, each its own task,
    /// connected by pipes; the status is the last stage's.
    async fn stages(&mut self, cmds: &[Cmd]) -> i32 {
        let mut jobs = Vec::with_capacity(cmds.len());
        let mut stdin = self.io.stdin.clone();
        let mut failed = None;
        for (i, cmd) in cmds.iter().enumerate() {
            let (stdout, next) = if i + 1 < cmds.len() {
                let (tx, rx) = mpsc::channel(PIPE_CHUNKS);
                (Output::Pipe(tx), Input::pipe(rx))
            } else {
                (self.io.stdout.clone(), Input::closed())
            };
            let mut child = self.fork(Io {
                stdin: std::mem::replace(&mut stdin, next),
                stdout,
                stderr: self.io.stderr.clone(),
            });
            child.errexit = false;
            let cmd = cmd.clone();
            match self
                .group
                .spawn(move |_| async move { child.command(&cmd).await.code() })
            {
                Ok(job) => jobs.push(job),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(stdin);
        let mut status = 0;
        for job in jobs {
            status = job.wait().await.code();
        }
        if let Some(e) = failed {
            let io = self.io.clone();
            self.err(&io, &spawn_message(e)).await;
            status = 2;
        }
        status
    }

    /// Runs one command of a pipeline in this shell.
    pub(crate) fn command<'a>(&'a mut self, cmd: &'a Cmd) -> BoxFut<'a, Flow> {
        Box::pin(async move {
            let redirs = match cmd {
                Cmd::Simple { redirs, .. }
                | Cmd::Subshell { redirs, .. }
                | Cmd::Group { redirs, .. } => redirs,
            };
            let mut io = self.io.clone();
            if let Err(msg) = self.apply_redirs(redirs, &mut io) {
                self.err(&io, &format!("{msg}\n")).await;
                return Flow::Next(1);
            }
            match cmd {
                Cmd::Simple { assigns, words, .. } => self.simple(assigns, words, io).await,
                Cmd::Subshell { body, .. } => {
                    let mut child = self.fork(io);
                    Flow::Next(child.list(body).await.code())
                }
                Cmd::Group { body, .. } => {
                    let saved = std::mem::replace(&mut self.io, io);
                    let flow = self.list(body).await;
                    self.io = saved;
                    flow
                }
            }
        })
    }

    async fn simple(&mut self, assigns: &[(String, Word)], words: &[Word], io: Io) -> Flow {
        self.sb.wait_unpaused().await;
        let argv: Vec<String> = words.iter().flat_map(|w| self.expand(w)).collect();
        let values: Vec<(String, String)> = assigns
            .iter()
            .map(|(k, w)| (k.clone(), self.expand_one(w)))
            .collect();
        if argv.is_empty() {
            self.vars.extend(values);
            return Flow::Next(0);
        }
        let saved: Vec<(String, Option<String>)> = values
            .into_iter()
            .map(|(k, v)| {
                let old = self.vars.insert(k.clone(), v);
                (k, old)
            })
            .collect();
        let flow = builtins::run(self, argv, &io).await;
        for (k, old) in saved.into_iter().rev() {
            match old {
                Some(v) => self.vars.insert(k, v),
                None => self.vars.remove(&k),
            };
        }
        flow
    }
}
