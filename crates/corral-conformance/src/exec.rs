//! Commands the cases run through `execute`, and what they conclude from
//! the settlement.
//!
//! Scripts stay inside what every target's shell runs: simple commands,
//! `;`, `&&`, `||`, `|`, redirections and single quotes — no command
//! substitution, no control structures, no globbing. Files are addressed
//! relative to a working directory inside the instance, never by absolute
//! path inside the script: on a provider that isolates nothing (the local
//! backend) an absolute path inside a command is a host path, while the
//! working directory is always resolved inside the instance.

use corral_contract::{
    CommandLine, ExecuteRequest, ExitCause, InstanceId, OutputLimitBytes, SandboxCommand,
    SandboxError, SandboxExecutionResult, SandboxPath, SandboxProvider, ShellScript,
    TimeoutSeconds,
};

use crate::failure::{Failure, shown};
use crate::request::internal;
use crate::scope::contract::ContractScope;
use crate::target::ConformanceTarget;

/// The `timeout_seconds` of every command.
pub(crate) const COMMAND_TIMEOUT_SECONDS: u64 = 30;

/// The `output_limit_bytes` of commands whose whole output is inspected.
pub(crate) const INSPECTED_OUTPUT_BYTES: u64 = 64 * 1024;

/// `name` single-quoted for the shell. The suite only quotes its own
/// literals, which never contain a quote.
pub(crate) fn quote(name: &str) -> String {
    debug_assert!(!name.contains('\''), "the suite's names carry no quote");
    format!("'{name}'")
}

/// The exit code, or a one-line description of the other causes.
pub(crate) fn exit_code(result: &SandboxExecutionResult) -> Result<u8, String> {
    match result.exit {
        ExitCause::Code(code) => Ok(code.as_u8()),
        ExitCause::Signal(signal) => Err(format!("ended by signal {signal}")),
        ExitCause::TimedOut => Err("timed out".into()),
    }
}

/// A file's directory and name.
fn split(file: &SandboxPath) -> Result<(SandboxPath, String), Failure> {
    match (file.parent(), file.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name.to_string())),
        _ => Err(Failure::new(format_args!("{file} has no parent directory"))),
    }
}

impl<T: ConformanceTarget> ContractScope<'_, T> {
    /// `execute` of `script` in `cwd` (the provider's default when `None`),
    /// keeping at most `limit` bytes per stream; the contract's answer as is.
    pub(crate) async fn try_execute(
        &self,
        id: &InstanceId,
        cwd: Option<&SandboxPath>,
        script: &str,
        limit: u64,
    ) -> Result<Result<SandboxExecutionResult, SandboxError>, Failure> {
        let mut command = SandboxCommand::new(
            CommandLine::Shell {
                shell: ShellScript::new(script).map_err(internal)?,
            },
            TimeoutSeconds::new(COMMAND_TIMEOUT_SECONDS).map_err(internal)?,
            OutputLimitBytes::new(limit).map_err(internal)?,
        );
        command.working_directory = cwd.cloned();
        let request = ExecuteRequest {
            instance_id: id.clone(),
            command,
        };
        Ok(self.rt()?.execute(request).await)
    }

    /// `execute`, which must settle (whatever the exit).
    pub(crate) async fn execute(
        &self,
        id: &InstanceId,
        cwd: Option<&SandboxPath>,
        script: &str,
        limit: u64,
    ) -> Result<SandboxExecutionResult, Failure> {
        self.try_execute(id, cwd, script, limit)
            .await?
            .map_err(|e| Failure::step(format_args!("execute `{script}`"), e))
    }

    /// `execute`, which must exit 0 with its whole stdout; returns stdout.
    pub(crate) async fn run_ok(
        &self,
        id: &InstanceId,
        cwd: Option<&SandboxPath>,
        script: &str,
    ) -> Result<Vec<u8>, Failure> {
        let r = self
            .execute(id, cwd, script, INSPECTED_OUTPUT_BYTES)
            .await?;
        let step = || format!("execute `{script}`");
        match exit_code(&r) {
            Ok(0) => {}
            Ok(code) => {
                return Err(Failure::step(
                    step(),
                    format_args!("exit code {code}, stderr {}", shown(&r.stderr.content)),
                ));
            }
            Err(why) => return Err(Failure::step(step(), why)),
        }
        if r.stdout.truncated {
            return Err(Failure::step(
                step(),
                format_args!("stdout truncated at {INSPECTED_OUTPUT_BYTES} bytes"),
            ));
        }
        Ok(r.stdout.content.to_vec())
    }

    /// The bytes of `file`, read by the workload (`cat` in its directory).
    pub(crate) async fn cat(
        &self,
        id: &InstanceId,
        file: &SandboxPath,
    ) -> Result<Vec<u8>, Failure> {
        let (dir, name) = split(file)?;
        self.run_ok(id, Some(&dir), &format!("cat {}", quote(&name)))
            .await
    }

    /// Requires the workload to see exactly `bytes` in `file`.
    pub(crate) async fn expect_file(
        &self,
        id: &InstanceId,
        file: &SandboxPath,
        bytes: &[u8],
    ) -> Result<(), Failure> {
        let seen = self.cat(id, file).await?;
        if seen == bytes {
            Ok(())
        } else {
            Err(Failure::new(format_args!(
                "{file} holds {} bytes {}, expected {} bytes {}",
                seen.len(),
                shown(&seen),
                bytes.len(),
                shown(bytes)
            )))
        }
    }

    /// Whether the workload sees anything at `file` (`test -e`).
    pub(crate) async fn exists(
        &self,
        id: &InstanceId,
        file: &SandboxPath,
    ) -> Result<bool, Failure> {
        let (dir, name) = split(file)?;
        let script = format!("test -e {} && echo present || echo absent", quote(&name));
        let out = self.run_ok(id, Some(&dir), &script).await?;
        match out.as_slice() {
            b"present\n" => Ok(true),
            b"absent\n" => Ok(false),
            other => Err(Failure::new(format_args!(
                "execute `{script}` in {dir}: unexpected output {}",
                shown(other)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_contract::{ExitCode, Interval, OutputBytes, SignalName, StreamCapture, Timestamp};

    fn result(exit: ExitCause) -> SandboxExecutionResult {
        let t = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        SandboxExecutionResult {
            exit,
            interval: Interval::new(t, t).unwrap(),
            stdout: StreamCapture {
                content: OutputBytes::new(b"x".to_vec()).unwrap(),
                truncated: false,
            },
            stderr: StreamCapture::default(),
        }
    }

    #[test]
    fn exit_causes_other_than_a_code_are_named() {
        assert_eq!(
            exit_code(&result(ExitCause::Code(ExitCode::from(3)))),
            Ok(3)
        );
        assert_eq!(
            exit_code(&result(ExitCause::Signal(SignalName::Sigkill))),
            Err("ended by signal SIGKILL".into())
        );
        assert_eq!(
            exit_code(&result(ExitCause::TimedOut)),
            Err("timed out".into())
        );
    }

    #[test]
    fn files_split_into_directory_and_name() {
        let file = SandboxPath::new("/workspace/data/input.txt").unwrap();
        let (dir, name) = split(&file).unwrap();
        assert_eq!(
            (dir.as_str(), name.as_str()),
            ("/workspace/data", "input.txt")
        );
        assert!(split(&SandboxPath::root()).is_err());
        assert_eq!(quote("a b"), "'a b'");
    }
}
