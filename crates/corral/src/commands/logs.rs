//! `corral logs ID NAME [-f]`: a background process's output (the SDK's
//! `processes().logs`), stdout to stdout and stderr to stderr. Without
//! `-f` it prints what there is and ends; with `-f` it keeps printing
//! until the process ends, or until Ctrl-C (or another ending signal:
//! exit 128 + n; the process goes on). A closed stdout ends it with 141.

use std::io::Write;
use std::time::Duration;

use corral_backend::StreamKind;
use corral_sdk::processes::LogCursor;

use crate::args::LogsArgs;
use crate::error::{CliError, CliResult, EXIT_BROKEN_PIPE};

use super::{ending_signals, shared};

/// How long `-f` waits between reads that found nothing new.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Runs `corral logs`.
pub async fn logs(args: LogsArgs) -> CliResult {
    let ending = ending_signals::listen();
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    let processes = sandbox.processes();
    let mut cursor = LogCursor::default();
    loop {
        let batch = processes.logs(&args.name, cursor).await?;
        cursor = batch.next;
        let had_output = !batch.chunks.is_empty();
        for chunk in &batch.chunks {
            let written = match chunk.stream {
                StreamKind::Stdout => write_flushed(&mut std::io::stdout().lock(), &chunk.data),
                StreamKind::Stderr => write_flushed(&mut std::io::stderr().lock(), &chunk.data),
            };
            if written.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                return Ok(EXIT_BROKEN_PIPE);
            }
        }
        if had_output {
            // A read returns at most a bounded amount: read on at once.
            continue;
        }
        if !args.follow || batch.ended {
            return Ok(0);
        }
        tokio::select! {
            () = ending.wait() => {
                let signal = ending.signal().map_or(130, |s| s.exit_status());
                return Err(CliError::failure(
                    "aborted",
                    "stopped following; the process goes on",
                ).with_exit(signal));
            }
            () = tokio::time::sleep(FOLLOW_POLL) => {}
        }
    }
}

fn write_flushed(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}
