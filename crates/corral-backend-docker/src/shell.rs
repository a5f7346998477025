//! A short helper command run in a sandbox for the file primitives the
//! archive API lacks (`mkdir -p`, `rm`): no stdin, stderr kept, exit code
//! returned.

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use corral_backend::{ExecError, Result};
use futures_util::StreamExt;

use crate::error::sandbox_error;

/// Runs `argv` in container `id`; returns its exit code and stderr.
pub(crate) async fn run(docker: &Docker, id: &str, argv: &[&str]) -> Result<(i64, String)> {
    let context = format!("{} in {id}", argv.first().copied().unwrap_or("exec"));
    let fail = |e: &bollard::errors::Error| sandbox_error(id, &context, e);
    let options = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        cmd: Some(argv.iter().map(|a| a.to_string()).collect()),
        ..CreateExecOptions::default()
    };
    let created = docker
        .create_exec(id, options)
        .await
        .map_err(|e| fail(&e))?;
    let mut stderr = Vec::new();
    match docker
        .start_exec(&created.id, None)
        .await
        .map_err(|e| fail(&e))?
    {
        StartExecResults::Attached { mut output, .. } => {
            while let Some(item) = output.next().await {
                if let LogOutput::StdErr { message } = item.map_err(|e| fail(&e))? {
                    stderr.extend_from_slice(&message);
                }
            }
        }
        StartExecResults::Detached => {}
    }
    for _ in 0..50 {
        let inspect = docker
            .inspect_exec(&created.id)
            .await
            .map_err(|e| fail(&e))?;
        if inspect.running != Some(true)
            && let Some(code) = inspect.exit_code
        {
            return Ok((code, String::from_utf8_lossy(&stderr).trim().to_string()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    Err(ExecError::NoExitStatus { what: context }.into())
}
