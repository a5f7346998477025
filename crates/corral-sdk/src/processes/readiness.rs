//! Readiness checks: a port accepting connections, an HTTP status on a
//! path, or a log line matching a regular expression — each polled until
//! it holds or a timeout passes. A timeout fails with `timeout` and the
//! process's last log lines; a process that ends first fails at once with
//! `conflict`, also showing them.
//!
//! - **Port**: a socket in `LISTEN` state on the port in the sandbox's
//!   `/proc/net/tcp` or `/proc/net/tcp6` (any address). A sandbox without
//!   them fails with `unsupported`.
//! - **HTTP**: `curl -s -o /dev/null -w '%{http_code}'` to
//!   `http://127.0.0.1:PORT/PATH` inside the sandbox; the status must equal
//!   the expected one. A sandbox without `curl` fails with `unsupported`.
//! - **Log line**: the regular expression is matched against each complete
//!   line of stdout and stderr (redacted), from the start of the log.

use std::time::{Duration, Instant};

use corral_backend::{ErrorCode, StreamKind};
use regex::Regex;

use super::{LogCursor, ProcessState, Processes, check_name};
use crate::Operation;
use crate::error::Result;
use crate::sh::quote;

/// Time between two polls of a readiness check.
pub const READY_POLL: Duration = Duration::from_millis(100);

/// What "ready" means for a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadyCheck {
    /// Something listens on this TCP port in the sandbox.
    Port(u16),
    /// `GET http://127.0.0.1:{port}{path}` inside the sandbox answers `status`.
    Http {
        /// The port.
        port: u16,
        /// The path, starting with `/`.
        path: String,
        /// The expected status code (e.g. 200).
        status: u16,
    },
    /// A line of stdout or stderr matches this regular expression.
    LogLine(String),
}

impl ReadyCheck {
    fn describe(&self) -> String {
        match self {
            ReadyCheck::Port(p) => format!("nothing listening on port {p}"),
            ReadyCheck::Http { port, path, status } => {
                format!("GET http://127.0.0.1:{port}{path} never answered {status}")
            }
            ReadyCheck::LogLine(re) => format!("no log line matched {re:?}"),
        }
    }
}

/// Exit 0 when something listens on the port whose hex form is `$1`.
const PORT_SCAN: &str = r#"p=":$1"
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] || continue
  while read -r sl local rem st rest; do
    case "$local" in
      *"$p") [ "$st" = 0A ] && exit 0 ;;
    esac
  done < "$f"
done
exit 1"#;

enum Probe {
    Ready,
    NotYet(String),
}

impl Processes<'_> {
    /// Polls `check` for process `name` until it holds or `timeout` passes.
    pub async fn wait_ready(
        &self,
        name: &str,
        check: &ReadyCheck,
        timeout: Duration,
    ) -> Result<()> {
        const OP: Operation = Operation::ProcessesReady;
        check_name(self.sb, OP, name)?;
        let log_re = match check {
            ReadyCheck::LogLine(re) => Some(Regex::new(re).map_err(|e| {
                let why = e.to_string().lines().last().unwrap_or_default().to_string();
                self.fail(
                    ErrorCode::InvalidInput,
                    OP,
                    format!("log pattern {re:?} is not a valid regular expression: {why}"),
                )
            })?),
            ReadyCheck::Http { path, .. }
                if !path.starts_with('/')
                    || path.chars().any(|c| c.is_whitespace() || c.is_control()) =>
            {
                return Err(self.fail(
                    ErrorCode::InvalidInput,
                    OP,
                    format!("HTTP path {path:?} must start with '/' and hold no spaces or control characters"),
                ));
            }
            _ => None,
        };
        if let ReadyCheck::Port(_) = check {
            let r = self
                .control(
                    OP,
                    "[ -r /proc/net/tcp ] || [ -r /proc/net/tcp6 ]".to_string(),
                )
                .await?;
            if !r.success() {
                return Err(self.fail(
                    ErrorCode::Unsupported,
                    OP,
                    "the sandbox has no /proc/net/tcp to find listening ports in",
                ));
            }
        }
        let started = Instant::now();
        let mut cursor = LogCursor::default();
        loop {
            let last = match self
                .probe(OP, name, check, log_re.as_ref(), &mut cursor)
                .await?
            {
                Probe::Ready => return Ok(()),
                Probe::NotYet(why) => why,
            };
            let (_, state) = self.state_of(OP, name).await?;
            if !state.is_running() {
                // One more look: it may have become ready just before ending.
                if let Probe::Ready = self
                    .probe(OP, name, check, log_re.as_ref(), &mut cursor)
                    .await?
                {
                    return Ok(());
                }
                let tail = self.tail_text(OP, name).await;
                let how = match state {
                    ProcessState::Exited(s) => format!("exited ({})", s.shell_code()),
                    _ => "was killed".to_string(),
                };
                return Err(self.fail(
                    ErrorCode::Conflict,
                    OP,
                    format!(
                        "process {name:?} {how} before it was ready ({}); {tail}",
                        check.describe()
                    ),
                ));
            }
            if started.elapsed() >= timeout {
                let tail = self.tail_text(OP, name).await;
                let detail = if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                };
                return Err(self.fail(
                    ErrorCode::Timeout,
                    OP,
                    format!(
                        "process {name:?} not ready after {timeout:?} ({}{detail}); {tail}",
                        check.describe()
                    ),
                ));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// One look at `check` (`log_re` is the compiled pattern of a log-line
    /// check, read on from `cursor`).
    async fn probe(
        &self,
        op: Operation,
        name: &str,
        check: &ReadyCheck,
        log_re: Option<&Regex>,
        cursor: &mut LogCursor,
    ) -> Result<Probe> {
        match (check, log_re) {
            (ReadyCheck::Port(port), _) => self.probe_port(op, *port).await,
            (ReadyCheck::Http { port, path, status }, _) => {
                self.probe_http(op, *port, path, *status).await
            }
            (ReadyCheck::LogLine(_), Some(re)) => self.probe_log(op, name, re, cursor).await,
            (ReadyCheck::LogLine(_), None) => Ok(Probe::NotYet(String::new())),
        }
    }

    async fn probe_port(&self, op: Operation, port: u16) -> Result<Probe> {
        let script = format!("set -- {port:04X}\n{PORT_SCAN}");
        let r = self.control(op, script).await?;
        Ok(if r.success() {
            Probe::Ready
        } else {
            Probe::NotYet(String::new())
        })
    }

    async fn probe_http(&self, op: Operation, port: u16, path: &str, status: u16) -> Result<Probe> {
        let url = format!("http://127.0.0.1:{port}{path}");
        let script = format!(
            "curl -s -o /dev/null -w '%{{http_code}}' --max-time 5 {}",
            quote(&url)
        );
        let r = self.control(op, script).await?;
        if r.code() == 127 {
            return Err(self.fail(
                ErrorCode::Unsupported,
                op,
                "the sandbox has no `curl` to check HTTP readiness with",
            ));
        }
        let got = r.stdout_text().trim().to_string();
        if got == status.to_string() {
            return Ok(Probe::Ready);
        }
        Ok(Probe::NotYet(if got.is_empty() || got == "000" {
            "no answer".to_string()
        } else {
            format!("last status {got}")
        }))
    }

    async fn probe_log(
        &self,
        op: Operation,
        name: &str,
        re: &Regex,
        cursor: &mut LogCursor,
    ) -> Result<Probe> {
        let logs = self
            .logs(name, *cursor)
            .await
            .map_err(|e| self.fail(e.code, op, e.message))?;
        *cursor = logs.next;
        for stream in [StreamKind::Stdout, StreamKind::Stderr] {
            if logs.text(stream).lines().any(|l| re.is_match(l)) {
                return Ok(Probe::Ready);
            }
        }
        Ok(Probe::NotYet(String::new()))
    }
}
