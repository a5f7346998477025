//! `corral shell ID [-- CMD…]`: an interactive program on a terminal of
//! an existing sandbox, attached to this one ([`super::terminal_session`]);
//! by default the image's shell, bash where it has one, else sh, as a
//! login shell. The sandbox stays when the shell ends.

use corral_backend::Command;

use crate::args::ShellArgs;
use crate::backends;
use crate::error::{CliError, CliResult};

use super::attach_mode::unsupported;
use super::ending_signals;
use super::terminal_session::{self, TerminalProgram};
use super::tty::HostTerminal;

/// The default program: bash where the image has it, else sh.
const DEFAULT_SHELL: &str = "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l";

/// Runs `corral shell`.
pub async fn shell(args: ShellArgs) -> CliResult {
    let host = HostTerminal::stdin()?;
    let command = if args.command.is_empty() {
        Command::shell(DEFAULT_SHELL)
    } else {
        Command::argv(args.command)
    }
    .map_err(|e| CliError::usage(e.to_string()))?;
    let env = crate::kv::parse_env(&args.env)?;
    let ending = ending_signals::listen();
    let backend = backends::for_id(args.backend.backend.as_deref(), &args.id).await?;
    let terminals = backend
        .terminal_ops()
        .ok_or_else(|| unsupported("shell", backend.name(), "no terminals"))?;
    // As for `exec`: attaching checks the sandbox exists, and its activity
    // record spares it from `gc --idle` while the shell is open.
    let sandbox = corral_sdk::Sandbox::connect_id(backend.clone(), &args.id).await?;
    let record = sandbox.begin_run_activity().await?;
    let program = TerminalProgram {
        command,
        env,
        timeout: None,
        run_as: None,
        cwd: None,
    };
    let ended = terminal_session::attach(terminals, &host, &args.id, program, &ending).await;
    record.end().await;
    ended
}
