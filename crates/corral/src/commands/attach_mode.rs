//! How `run` and `exec` connect this process's stdio to the command: `-i`
//! (keep stdin open and forward it), `-t` (a terminal; with `-i`, as
//! `-it`), or neither (stdin is not read, output is streamed).
//!
//! Each mode is checked before anything is created: `-t` needs a terminal
//! on stdin and a backend with terminals, `-i` a backend with live
//! processes; each refusal is one line naming the flag (and the backend).

use corral_backend::{Backend, ExecRequest};

use crate::error::{CliError, CliResult};

use super::ending_signals::Ending;
use super::shared;
use super::stdin_exec::exec_with_stdin;
use super::terminal_session::{self, TerminalProgram};
use super::tty::HostTerminal;

/// How the command's stdio is connected.
#[derive(Debug, Clone, Copy)]
pub enum AttachMode {
    /// Stdin is not read; output is streamed (no flag).
    Output,
    /// Stdin is forwarded to the command's stdin (`-i`).
    Stdin,
    /// The command runs on a terminal attached to stdin's (`-it`).
    Terminal(HostTerminal),
}

impl AttachMode {
    /// The mode `-i` and `-t` ask for. `-t` alone is refused: a terminal
    /// nothing can type into would hang a shell waiting for input.
    pub fn from_flags(interactive: bool, tty: bool) -> Result<Self, CliError> {
        match (interactive, tty) {
            (false, false) => Ok(AttachMode::Output),
            (true, false) => Ok(AttachMode::Stdin),
            (true, true) => Ok(AttachMode::Terminal(HostTerminal::stdin()?)),
            (false, true) => Err(CliError::usage(
                "-t needs -i: a terminal takes its input from stdin (use -it)",
            )),
        }
    }

    /// Refuses, in one line naming the flag and the backend, a mode the
    /// backend cannot serve.
    pub fn check(self, backend: &dyn Backend) -> Result<(), CliError> {
        let missing = match self {
            AttachMode::Output => return Ok(()),
            AttachMode::Stdin if backend.process_ops().is_none() => {
                ("-i", "no live processes to forward stdin to")
            }
            AttachMode::Terminal(_) if backend.terminal_ops().is_none() => ("-t", "no terminals"),
            AttachMode::Stdin | AttachMode::Terminal(_) => return Ok(()),
        };
        Err(unsupported(missing.0, backend.name(), missing.1))
    }

    /// Runs `req` in sandbox `id` in this mode (checked with
    /// [`AttachMode::check`]).
    pub async fn run(
        self,
        backend: &dyn Backend,
        id: &str,
        req: ExecRequest,
        ending: &Ending,
    ) -> CliResult {
        match self {
            AttachMode::Output => shared::exec_live(backend, id, req, ending).await,
            AttachMode::Stdin => {
                let processes = backend.process_ops().ok_or_else(|| {
                    unsupported(
                        "-i",
                        backend.name(),
                        "no live processes to forward stdin to",
                    )
                })?;
                exec_with_stdin(processes, id, req, ending).await
            }
            AttachMode::Terminal(host) => {
                let terminals = backend
                    .terminal_ops()
                    .ok_or_else(|| unsupported("-t", backend.name(), "no terminals"))?;
                let program = TerminalProgram {
                    command: req.command,
                    env: req.env,
                    timeout: req.timeout,
                    run_as: req.run_as,
                    cwd: req.cwd,
                };
                terminal_session::attach(terminals, &host, id, program, ending).await
            }
        }
    }
}

/// The refusal of `flag` on a backend without what it needs.
pub fn unsupported(flag: &str, backend: &str, lacks: &str) -> CliError {
    CliError::failure(
        "unsupported",
        format!("{flag}: the {backend} backend has {lacks}"),
    )
}
