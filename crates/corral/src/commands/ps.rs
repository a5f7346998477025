//! `corral ps ID`: the sandbox's background processes (the SDK's
//! `processes().list`): a table, JSON for machines, or names alone with
//! `-q`.

use corral_sdk::processes::{ProcessInfo, ProcessState};
use serde_json::json;

use crate::args::PsArgs;
use crate::error::{CliError, CliResult};

use super::{ls, shared, table};

/// Runs `corral ps`.
pub async fn ps(args: PsArgs) -> CliResult {
    let sandbox = shared::sandbox(args.backend.backend.as_deref(), &args.id).await?;
    let list = sandbox.processes().list().await?;
    if args.quiet {
        for p in &list {
            println!("{}", p.name);
        }
    } else if args.json {
        let rows: Vec<_> = list.iter().map(to_json).collect();
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
        println!("{text}");
    } else {
        let now = corral_backend::now_ms();
        let rows = list.iter().map(|p| {
            vec![
                p.name.clone(),
                p.pid.map_or("-".into(), |pid| pid.to_string()),
                state(&p.state),
                p.record
                    .as_ref()
                    .map_or("-".into(), |r| ls::age(now.saturating_sub(r.started_at_ms))),
                p.record
                    .as_ref()
                    .map_or("-".into(), |r| r.command.to_argv().join(" ")),
            ]
        });
        print!(
            "{}",
            table::render(&["NAME", "PID", "STATE", "AGE", "COMMAND"], rows)
        );
    }
    Ok(0)
}

/// `running`, `exited N` (the shell's code), or `lost`.
fn state(s: &ProcessState) -> String {
    match s {
        ProcessState::Running => "running".into(),
        ProcessState::Exited(status) => format!("exited {}", status.shell_code()),
        ProcessState::Lost => "lost".into(),
    }
}

/// One process for machines.
fn to_json(p: &ProcessInfo) -> serde_json::Value {
    let exit_code = match &p.state {
        ProcessState::Exited(status) => Some(status.shell_code()),
        _ => None,
    };
    json!({
        "name": p.name,
        "pid": p.pid,
        "state": match p.state {
            ProcessState::Running => "running",
            ProcessState::Exited(_) => "exited",
            ProcessState::Lost => "lost",
        },
        "exit_code": exit_code,
        "command": p.record.as_ref().map(|r| r.command.to_argv()),
        "started_at_ms": p.record.as_ref().map(|r| r.started_at_ms),
    })
}
