//! The `e2b` group: E2B's own Python SDK, unmodified, driving `corral
//! serve` on loopback — `Sandbox.create()` → `commands.run("true")` →
//! `kill()` per iteration — beside the same backend's create→exec→destroy
//! called in process (the floor).
//!
//! The SDK row runs the real server: the `corral` binary the bench was
//! started from (`BenchConfig::corral_bin`), as `corral serve --backend
//! KIND --listen 127.0.0.1:0` on a temporary state directory with a
//! generated `e2b_…` key. The SDK runs in one long-lived Python process
//! (the interpreter `$CORRAL_BENCH_E2B_PYTHON` names, else `python3`, if
//! either imports `e2b`), so an iteration times one cycle and none of
//! Python's start: the bench writes `go` on its stdin and waits for its
//! `ok` line. Without the binary or the package the row is skipped,
//! saying which.
//!
//! Teardown closes the driver's stdin (it exits), then stops the server
//! with SIGTERM: its shutdown destroys every sandbox it made, so a cycle
//! broken halfway leaves nothing behind, and the state directory goes
//! with it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use corral_registry::BackendKind;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::BenchError;
use crate::measure::{BoxFuture, Group, Measure, Setup};

/// The variable naming the Python interpreter that has the `e2b` package.
pub const E2B_PYTHON_VAR: &str = "CORRAL_BENCH_E2B_PYTHON";

/// How long the server and the driver have to say they are ready, and to
/// exit when asked.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// The driver: imports the SDK, says `ready <version>`, then runs one cycle
/// per `go` line and answers `ok` (or `error <one line>`) for each.
const DRIVER: &str = r#"
import sys
from importlib.metadata import version
from e2b import Sandbox

print("ready", version("e2b"), flush=True)
for line in sys.stdin:
    try:
        sandbox = Sandbox.create()
        try:
            result = sandbox.commands.run("true")
        finally:
            sandbox.kill()
        answer = "ok" if result.exit_code == 0 else f"error exit {result.exit_code}"
    except Exception as e:
        answer = "error " + " ".join(f"{type(e).__name__}: {e}".split())
    print(answer, flush=True)
"#;

/// The SDK's create → `commands.run("true")` → kill through `corral serve`.
pub struct E2bSdkMeasure {
    kind: BackendKind,
    name: String,
    corral: Option<PathBuf>,
    python: Option<PathBuf>,
    run: Option<Running>,
    sdk_version: Option<String>,
}

/// The server and the driver of a set-up row.
struct Running {
    server: Child,
    /// The rest of the server's stdout, held open until it exits.
    server_out: Option<Lines<BufReader<ChildStdout>>>,
    driver: Child,
    to_driver: ChildStdin,
    from_driver: Lines<BufReader<ChildStdout>>,
    /// The state directory and the key file.
    scratch: tempfile::TempDir,
}

impl E2bSdkMeasure {
    /// The row for backend `kind`, serving with the binary `corral` (none:
    /// the row is skipped) and the interpreter of `python` (none: the
    /// variable, else `python3`).
    pub fn new(kind: BackendKind, corral: Option<PathBuf>, python: Option<PathBuf>) -> Self {
        E2bSdkMeasure {
            kind,
            name: format!("e2b SDK create+run+kill via serve ({})", kind.name()),
            corral,
            python,
            run: None,
            sdk_version: None,
        }
    }

    /// The interpreter asked for, else `python3` on `PATH`.
    fn python(&self) -> Option<PathBuf> {
        self.python
            .clone()
            .or_else(|| crate::host::find_program("python3"))
    }

    async fn start(&mut self, corral: &Path, python: &Path) -> Result<Setup, BenchError> {
        let scratch = tempfile::tempdir()
            .map_err(|e| BenchError::io("creating a temporary state directory", e))?;
        let key = format!(
            "e2b_{}",
            corral_backend::statefile::random_hex_of(20).map_err(|e| BenchError::io("a key", e))?
        );
        let key_file = scratch.path().join("key");
        std::fs::write(&key_file, &key).map_err(|e| BenchError::io("writing the key file", e))?;
        let state = scratch.path().join("state");
        let mut server = Command::new(corral)
            .args([
                "serve",
                "--backend",
                self.kind.name(),
                "--listen",
                "127.0.0.1:0",
            ])
            .arg("--token-file")
            .arg(&key_file)
            .env("CORRAL_STATE_DIR", &state)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::io(format!("starting {} serve", corral.display()), e))?;
        let (first, server_out) = first_line(server.stdout.take()).await;
        let url = match first
            .as_deref()
            .and_then(|l| l.split_whitespace().find(|w| w.starts_with("http://")))
        {
            Some(url) => url.to_string(),
            None => {
                let _ = server.kill().await;
                return Err(BenchError::io(
                    "corral serve",
                    format!("printed {first:?}, not its URL"),
                ));
            }
        };
        let script = scratch.path().join("driver.py");
        std::fs::write(&script, DRIVER).map_err(|e| BenchError::io("writing the driver", e))?;
        let mut driver = Command::new(python)
            .arg(&script)
            .env("E2B_API_URL", &url)
            .env("E2B_SANDBOX_URL", &url)
            .env("E2B_API_KEY", &key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::io(format!("starting {}", python.display()), e))?;
        let (Some(to_driver), Some(out)) = (driver.stdin.take(), driver.stdout.take()) else {
            return Err(BenchError::io("the driver", "no stdin or stdout"));
        };
        let mut from_driver = BufReader::new(out).lines();
        let ready = tokio::time::timeout(READY_LIMIT, from_driver.next_line()).await;
        let version = match ready {
            Ok(Ok(Some(line))) => line.strip_prefix("ready ").map(str::to_owned),
            _ => None,
        };
        self.run = Some(Running {
            server,
            server_out,
            driver,
            to_driver,
            from_driver,
            scratch,
        });
        match version {
            Some(v) => {
                self.sdk_version = Some(v);
                Ok(Setup::Ready)
            }
            None => Ok(Setup::Skip(format!(
                "{} cannot import the e2b package (set {E2B_PYTHON_VAR} to a Python that has it)",
                python.display()
            ))),
        }
    }
}

/// The first line `out` gives within [`READY_LIMIT`], and the rest of it
/// (kept open: a server whose stdout is closed cannot print its shutdown).
async fn first_line(
    out: Option<ChildStdout>,
) -> (Option<String>, Option<Lines<BufReader<ChildStdout>>>) {
    let Some(out) = out else {
        return (None, None);
    };
    let mut lines = BufReader::new(out).lines();
    let first = match tokio::time::timeout(READY_LIMIT, lines.next_line()).await {
        Ok(Ok(line)) => line,
        _ => None,
    };
    (first, Some(lines))
}

impl Measure for E2bSdkMeasure {
    fn name(&self) -> &str {
        &self.name
    }

    fn group(&self) -> Group {
        Group::E2b
    }

    fn default_iterations(&self) -> u32 {
        20
    }

    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            let Some(corral) = self.corral.clone() else {
                return Ok(Setup::Skip("needs the corral binary to serve".into()));
            };
            let Some(python) = self.python() else {
                return Ok(Setup::Skip(format!(
                    "no python3 (set {E2B_PYTHON_VAR} to a Python that has the e2b package)"
                )));
            };
            self.start(&corral, &python).await
        })
    }

    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let run = self
                .run
                .as_mut()
                .ok_or_else(|| BenchError::io("e2b row", "iteration before a successful setup"))?;
            run.to_driver
                .write_all(b"go\n")
                .await
                .map_err(|e| BenchError::io("writing to the driver", e))?;
            match run.from_driver.next_line().await {
                Ok(Some(line)) if line == "ok" => Ok(()),
                Ok(Some(line)) => Err(BenchError::io("the SDK cycle", line)),
                Ok(None) => Err(BenchError::io("the SDK cycle", "the driver exited")),
                Err(e) => Err(BenchError::io("reading the driver", e)),
            }
        })
    }

    fn note(&self) -> Option<String> {
        self.sdk_version
            .as_ref()
            .map(|v| format!("python e2b {v} → corral serve on 127.0.0.1"))
    }

    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            let Some(run) = self.run.take() else {
                return Ok(());
            };
            let Running {
                mut server,
                server_out,
                mut driver,
                to_driver,
                from_driver,
                scratch,
            } = run;
            drop(to_driver);
            drop(from_driver);
            if tokio::time::timeout(READY_LIMIT, driver.wait())
                .await
                .is_err()
            {
                let _ = driver.kill().await;
            }
            let stopped = stop(&mut server).await;
            drop(server_out);
            let removed = scratch
                .close()
                .map_err(|e| BenchError::io("removing the serve state directory", e));
            stopped.and(removed)
        })
    }
}

/// Stops `server` with SIGTERM (its shutdown destroys the sandboxes it
/// made) and waits for it; SIGKILL past [`READY_LIMIT`].
async fn stop(server: &mut Child) -> Result<(), BenchError> {
    let Some(pid) = server.id() else {
        return Ok(());
    };
    let pid = rustix::process::Pid::from_raw(pid as i32)
        .ok_or_else(|| BenchError::io("corral serve", "no pid"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)
        .map_err(|e| BenchError::io("stopping corral serve", e))?;
    match tokio::time::timeout(READY_LIMIT, server.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(BenchError::io(
            "corral serve",
            format!("shut down with {status}"),
        )),
        Ok(Err(e)) => Err(BenchError::io("waiting for corral serve", e)),
        Err(_) => {
            let _ = server.kill().await;
            Err(BenchError::io(
                "corral serve",
                "did not shut down within 60 s",
            ))
        }
    }
}
