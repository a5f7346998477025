//! Reading process records: pid, exit, liveness, `status` and `list`.

use std::time::Duration;

use corral_backend::{Command, ErrorCode, ExitStatus, SignalName};

use super::{PROCS_DIR, ProcessInfo, ProcessRecord, ProcessState, Processes, check_name, dir_of};
use crate::Operation;
use crate::error::Result;
use crate::run::{RunOptions, RunResult};
use crate::sh::quote;

/// How long one control command may run.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// Exit 0 when a member of process group `$1` is alive and not a zombie, 1
/// when none is, 3 when there is no `/proc` to tell.
const GROUP_SCAN: &str = r#"g=$1
[ -r /proc/self/stat ] || exit 3
for f in /proc/[0-9]*/stat; do
  read -r l < "$f" 2>/dev/null || continue
  r=${l##*") "}
  set -- $r
  [ "$3" = "$g" ] && [ "$1" != Z ] && exit 0
done
exit 1"#;

/// Parses an `exit` record: `CODE` or `signal NAME` (`SIG<n>` for a
/// signal the contract has no name for), ending in a newline (a record
/// without one is still being written). The record lives in the sandbox, so
/// a name that is no signal reads as no record at all, like a code that is
/// no number.
pub(crate) fn parse_exit(text: &str) -> Option<ExitStatus> {
    let line = text.strip_suffix('\n')?.trim();
    if let Some(sig) = line.strip_prefix("signal ") {
        let sig = sig.trim();
        if let Ok(name) = SignalName::parse(sig) {
            return Some(ExitStatus::Signal(name));
        }
        let n: i32 = sig.strip_prefix("SIG")?.parse().ok()?;
        return (SignalName::from_number(n).is_none() && (1..=64).contains(&n))
            .then_some(ExitStatus::UnnamedSignal(n));
    }
    line.parse().ok().map(ExitStatus::Code)
}

/// The text of an `exit` record for `status`.
pub(crate) fn exit_text(status: &ExitStatus) -> String {
    match status {
        ExitStatus::Code(c) => format!("{c}\n"),
        ExitStatus::Signal(s) => format!("signal {s}\n"),
        ExitStatus::UnnamedSignal(n) => format!("signal SIG{n}\n"),
        ExitStatus::OomKilled => "signal SIGKILL\n".to_string(),
    }
}

impl Processes<'_> {
    /// Runs a control command (a shell script) with a bounded time.
    pub(crate) async fn control(&self, op: Operation, script: String) -> Result<RunResult> {
        let options = RunOptions {
            timeout: Some(CONTROL_TIMEOUT),
            ..RunOptions::default()
        };
        self.sb
            .run_with(script, options)
            .await
            .map_err(|e| self.fail(e.code, op, e.message))
    }

    /// A record file's text; `None` when it does not exist.
    pub(crate) async fn record_file(
        &self,
        op: Operation,
        name: &str,
        file: &str,
    ) -> Result<Option<String>> {
        let path = corral_backend::sandbox_path("path", &format!("{}/{file}", dir_of(name)))
            .map_err(|e| self.sb.error(op, e))?;
        match self.sb.backend().files().read(self.sb.id(), &path).await {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(self.sb.error(op, e)),
        }
    }

    /// The process's pid (= group id), once the wrapper wrote it.
    pub(crate) async fn pid_of(&self, op: Operation, name: &str) -> Result<Option<u32>> {
        let text = self.record_file(op, name, "pid").await?;
        Ok(text.and_then(|t| t.strip_suffix('\n').and_then(|l| l.trim().parse().ok())))
    }

    /// The exit record, once written.
    pub(crate) async fn exit_of(&self, op: Operation, name: &str) -> Result<Option<ExitStatus>> {
        let text = self.record_file(op, name, "exit").await?;
        Ok(text.as_deref().and_then(parse_exit))
    }

    /// Whether process group `pgid` has a live (non-zombie) member: one
    /// control run, `kill -0` first, then the `/proc` scan in a shell of
    /// its own (so a shell that cannot parse the scan still runs `kill -0`).
    pub(crate) async fn group_alive(&self, op: Operation, pgid: u32) -> Result<bool> {
        let script = format!(
            "kill -0 -{pgid} 2>/dev/null || exit 1\nsh -c {} corral-scan {pgid}",
            quote(GROUP_SCAN)
        );
        let r = self.control(op, script).await?;
        // 0: a live member; 1: no member (`kill -0` failed) or only
        // zombies; anything else: no `/proc` (or a shell that cannot run the
        // scan) — trust `kill -0`, which passed.
        Ok(r.code() != 1)
    }

    /// Where process `name` is in its life; `not_found` without a record.
    /// An ended or lost process's activity record is removed.
    pub(crate) async fn state_of(
        &self,
        op: Operation,
        name: &str,
    ) -> Result<(Option<u32>, ProcessState)> {
        let found = self.probe_state(op, name).await?;
        if !found.1.is_running() {
            self.end_activity(name).await;
        }
        Ok(found)
    }

    /// Removes process `name`'s activity record, if it is still there.
    pub(crate) async fn end_activity(&self, name: &str) {
        let b = self.sb.backend();
        // Best effort: gone already is the usual case.
        if let Ok(path) = corral_backend::sandbox_path("path", &super::activity_path(name)) {
            let _ = b.files().remove(self.sb.id(), &path, false).await;
        }
    }

    async fn probe_state(&self, op: Operation, name: &str) -> Result<(Option<u32>, ProcessState)> {
        if let Some(status) = self.exit_of(op, name).await? {
            let pid = self.pid_of(op, name).await?;
            return Ok((pid, ProcessState::Exited(status)));
        }
        let Some(pid) = self.pid_of(op, name).await? else {
            let exists = self
                .sb
                .files()
                .exists(&dir_of(name))
                .await
                .map_err(|e| self.fail(e.code, op, e.message))?;
            if !exists {
                return Err(self.fail(
                    ErrorCode::NotFound,
                    op,
                    format!("no process named {name:?}"),
                ));
            }
            return Ok((None, ProcessState::Lost));
        };
        if self.group_alive(op, pid).await? {
            return Ok((Some(pid), ProcessState::Running));
        }
        // The wrapper may have written its record while we looked.
        match self.exit_of(op, name).await? {
            Some(status) => Ok((Some(pid), ProcessState::Exited(status))),
            None => Ok((Some(pid), ProcessState::Lost)),
        }
    }

    /// What is known of process `name`; `not_found` when there is no such process.
    pub async fn status(&self, name: &str) -> Result<ProcessInfo> {
        const OP: Operation = Operation::ProcessesStatus;
        check_name(self.sb, OP, name)?;
        self.info(OP, name).await
    }

    pub(crate) async fn info(&self, op: Operation, name: &str) -> Result<ProcessInfo> {
        let (pid, state) = self.state_of(op, name).await?;
        let record = self
            .record_file(op, name, "spec.json")
            .await?
            .and_then(|t| serde_json::from_str::<ProcessRecord>(&t).ok())
            .and_then(|mut r| {
                // Redacting can only lengthen an argument; one that no
                // longer fits is not shown at all rather than unredacted.
                r.command = match &r.command {
                    Command::Argv(v) => {
                        Command::argv(v.as_slice().iter().map(|a| self.sb.redact_text(a)))
                    }
                    Command::Shell(s) => Command::shell(self.sb.redact_text(s.as_str())),
                }
                .ok()?;
                Some(r)
            });
        Ok(ProcessInfo {
            name: name.to_string(),
            pid,
            record,
            state,
        })
    }

    /// Every process with a record in this sandbox, running or ended, by name.
    pub async fn list(&self) -> Result<Vec<ProcessInfo>> {
        const OP: Operation = Operation::ProcessesList;
        let dir =
            corral_backend::sandbox_path("path", PROCS_DIR).map_err(|e| self.sb.error(OP, e))?;
        let entries = match self.sb.backend().files().list(self.sb.id(), &dir).await {
            Ok(e) => e,
            Err(e) if e.code() == ErrorCode::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.sb.error(OP, e)),
        };
        let mut out = Vec::new();
        for e in entries {
            if e.file_type != corral_backend::FileType::Directory
                || check_name(self.sb, OP, &e.name).is_err()
            {
                continue;
            }
            match self.info(OP, &e.name).await {
                Ok(info) => out.push(info),
                // Removed while we listed.
                Err(err) if err.code == ErrorCode::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_records_parse() {
        assert_eq!(parse_exit("0\n"), Some(ExitStatus::Code(0)));
        assert_eq!(parse_exit("143\n"), Some(ExitStatus::Code(143)));
        assert_eq!(
            parse_exit("signal SIGTERM\n"),
            Some(ExitStatus::Signal(SignalName::Sigterm))
        );
        assert_eq!(parse_exit("1"), None, "a record still being written");
        assert_eq!(parse_exit(""), None);
        assert_eq!(parse_exit("x\n"), None);
        for s in [
            ExitStatus::Signal(SignalName::Sigkill),
            ExitStatus::UnnamedSignal(34),
            ExitStatus::Code(7),
        ] {
            assert_eq!(parse_exit(&exit_text(&s)), Some(s.clone()), "{s:?}");
        }
    }

    /// The record is the sandbox's to write: what a hostile workload puts
    /// there reads as a signal only when it is one.
    #[test]
    fn a_forged_exit_record_names_no_signal_that_does_not_exist() {
        let table = [
            ("signal \n", None),
            ("signal SIGNOPE\n", None),
            ("signal SIG9\n", None),
            ("signal SIG0\n", None),
            ("signal SIG65\n", None),
            ("signal SIG-1\n", None),
            (
                "signal SIGKILL\n",
                Some(ExitStatus::Signal(SignalName::Sigkill)),
            ),
            ("signal SIG64\n", Some(ExitStatus::UnnamedSignal(64))),
        ];
        for (record, status) in table {
            assert_eq!(parse_exit(record), status, "{record:?}");
        }
    }
}
