//! `processes.start`: a detached wrapper in a new session, with its output
//! kept in the process record.

use std::time::{Duration, Instant};

use corral_backend::{Command, ErrorCode, now_ms};

use super::{
    PROCS_DIR, ProcessHandle, ProcessRecord, ProcessState, Processes, StartOptions, activity_name,
    activity_path, check_name, dir_of,
};
use crate::Operation;
use crate::error::Result;
use crate::run::RunOptions;
use crate::sh::quote;

/// How long `start` waits for the wrapper to write its pid.
const PID_WAIT: Duration = Duration::from_secs(10);

/// Default time a readiness check given to `start` may take.
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The wrapper script; `dir` is the record directory as commands see it.
///
/// `setsid` runs in the foreground: it makes a new session (and process
/// group) before the exec's shell can exit, so the backend's kill of the
/// exec's group can never race it. The session's first shell writes its pid
/// (the new group's id), starts the job in the background, in the same
/// group, and exits.
fn wrapper(dir: &str, name: &str, argv: &[String]) -> String {
    let d = |file: &str| quote(&format!("{dir}/{file}"));
    let job = format!(
        // The activity record goes before the exit file appears: once a
        // waiter sees the exit, a new process of the same name may write
        // its own record, which a late `rm` would take away.
        "\"$@\" > {out} 2> {err} < /dev/null; c=$?; rm -f {activity}; echo $c > {exit}",
        out = d("stdout"),
        err = d("stderr"),
        exit = d("exit"),
        activity = d(&format!("../../activity/{}", activity_name(name))),
    );
    let args: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    let leader = format!(
        "echo $$ > {pid}; sh -c {job} corral-proc {args} < /dev/null > /dev/null 2>&1 &",
        pid = d("pid"),
        job = quote(&job),
        args = args.join(" "),
    );
    format!("setsid sh -c {} < /dev/null > /dev/null", quote(&leader))
}

impl Processes<'_> {
    /// Starts `command` in the background as process `name`, in the
    /// sandbox's home with its environment.
    pub async fn start(&self, name: &str, command: Command) -> Result<ProcessHandle> {
        self.start_with(name, command, StartOptions::default())
            .await
    }

    /// Starts `command` in the background as process `name`. A process of
    /// that name that still runs is a `conflict`; an ended one's record is
    /// replaced.
    pub async fn start_with(
        &self,
        name: &str,
        command: Command,
        options: StartOptions,
    ) -> Result<ProcessHandle> {
        const OP: Operation = Operation::ProcessesStart;
        check_name(self.sb, OP, name)?;
        if let Some(cwd) = &options.cwd
            && !cwd.starts_with('/')
        {
            return Err(self.fail(
                ErrorCode::InvalidInput,
                OP,
                format!("cwd {cwd:?} is not an absolute path"),
            ));
        }
        let dir = dir_of(name);
        let files = self.sb.files();
        if files
            .exists(&dir)
            .await
            .map_err(|e| self.fail(e.code, OP, e.message))?
        {
            match self.state_of(OP, name).await? {
                (_, ProcessState::Running) => {
                    return Err(self.fail(
                        ErrorCode::Conflict,
                        OP,
                        format!("a process named {name:?} is already running"),
                    ));
                }
                _ => files
                    .remove(&dir, true)
                    .await
                    .map_err(|e| self.fail(e.code, OP, e.message))?,
            }
        }
        files
            .mkdir(&dir)
            .await
            .map_err(|e| self.fail(e.code, OP, e.message))?;
        let record = ProcessRecord {
            name: name.to_string(),
            command: command.clone(),
            cwd: options.cwd.clone(),
            env_names: options.env.keys().map(ToString::to_string).collect(),
            started_at_ms: now_ms(),
        };
        let json = serde_json::to_vec_pretty(&record).map_err(|e| {
            self.fail(
                ErrorCode::Io,
                OP,
                format!("encoding the process record: {e}"),
            )
        })?;
        files
            .write_op(OP, &format!("{dir}/spec.json"), &json, 0o644)
            .await?;
        // Garbage collection spares a sandbox while this record exists.
        files
            .write_op(
                OP,
                &activity_path(name),
                format!("process {name}\n").as_bytes(),
                0o644,
            )
            .await?;
        let result = self.launch(OP, name, &command, &options).await;
        if let Err(e) = result {
            // Leave no half-made record behind.
            let _ = self.sb.files().remove(&dir, true).await;
            self.end_activity(name).await;
            return Err(e);
        }
        let handle = ProcessHandle::new(self.sb.clone(), name);
        if let Some(check) = &options.ready {
            let timeout = options.ready_timeout.unwrap_or(DEFAULT_READY_TIMEOUT);
            if let Err(e) = self.wait_ready(name, check, timeout).await {
                let _ = self.kill(name).await;
                return Err(self.fail(e.code, OP, e.message));
            }
        }
        Ok(handle)
    }

    /// [`PROCS_DIR`] as commands see it: `pwd -P` run there by the first
    /// start on this handle, then kept (the path does not change while the
    /// sandbox lives), so later starts make one run instead of two.
    async fn procs_dir_seen(&self, op: Operation) -> Result<&str> {
        let seen = self
            .sb
            .inner
            .procs_dir_seen
            .get_or_try_init(|| async {
                let r = self
                    .sb
                    .run_with(
                        Command::argv(["pwd", "-P"]).map_err(|e| self.sb.error(op, e.into()))?,
                        RunOptions {
                            cwd: Some(PROCS_DIR.to_string()),
                            timeout: Some(Duration::from_secs(30)),
                            ..RunOptions::default()
                        },
                    )
                    .await
                    .map_err(|e| self.fail(e.code, op, e.message))?;
                let path = r.stdout_text().trim_end_matches('\n').to_string();
                if !r.success() || !path.starts_with('/') || path.contains('\n') {
                    return Err(self.fail(
                        ErrorCode::Unsupported,
                        op,
                        format!(
                            "`pwd -P` in {PROCS_DIR} did not print a path (exit {}): {}",
                            r.code(),
                            r.stderr_text().trim()
                        ),
                    ));
                }
                Ok(path)
            })
            .await?;
        Ok(seen)
    }

    async fn launch(
        &self,
        op: Operation,
        name: &str,
        command: &Command,
        options: &StartOptions,
    ) -> Result<()> {
        let seen_dir = format!("{}/{name}", self.procs_dir_seen(op).await?);
        let script = wrapper(&seen_dir, name, &command.to_argv());
        let r = self
            .sb
            .run_with(
                script,
                RunOptions {
                    cwd: options.cwd.clone(),
                    env: options.env.clone(),
                    timeout: Some(Duration::from_secs(30)),
                    ..RunOptions::default()
                },
            )
            .await
            .map_err(|e| self.fail(e.code, op, e.message))?;
        if !r.success() {
            // 127: `setsid` (or `sh`) is not there.
            let code = if r.code() == 127 {
                ErrorCode::Unsupported
            } else {
                ErrorCode::Io
            };
            return Err(self.fail(
                code,
                op,
                format!(
                    "the wrapper of {name:?} failed (exit {}): {}",
                    r.code(),
                    r.stderr_text().trim()
                ),
            ));
        }
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            if self.pid_of(op, name).await?.is_some() {
                return Ok(());
            }
            if started.elapsed() >= PID_WAIT {
                return Err(self.fail(
                    ErrorCode::Unsupported,
                    op,
                    format!(
                        "the wrapper of {name:?} never wrote its pid within {PID_WAIT:?}: \
                         the sandbox needs `sh` and `setsid` to run background processes"
                    ),
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_quotes_every_path_and_argument() {
        let w = wrapper("/s/it's", "n", &["echo".into(), "a b".into()]);
        assert!(w.starts_with("setsid sh -c '"), "{w}");
        assert!(w.ends_with("' < /dev/null > /dev/null"), "{w}");
        assert!(!w.contains("it's"), "the quote is escaped: {w}");
    }
}
