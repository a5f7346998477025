//! # corral (the command line)
//!
//! `corral run -- CMD` creates a sandbox, runs `CMD` in it with live output,
//! exits with its exit code and destroys the sandbox. The other subcommands
//! manage sandboxes that outlive one invocation (`create`, `exec`,
//! `shell`, `cp`, `ls`, `rm`, `start`, `ps`, `logs`, `snapshot`, `pause`,
//! `resume`). The flags that shape a sandbox (`--memory`, `--network`,
//! `--secret`, …) are [`flags`].
//!
//! Every failure is one line on stderr, `corral: error: [code] message`,
//! with exit status 2 for bad input and 1 for failures; never a panic or a
//! backtrace. `run` and `exec` exit with the command's exit code, 124 after
//! `--timeout`, 128 + n after a caught ending signal n (naming it), and 141
//! (128 + SIGPIPE, silently) when their stdout or stderr is a pipe whose
//! reader closed it; the last two kill the command's process group. Any
//! other command printing into a pipe whose reader closed also ends
//! quietly with 141.

pub mod args;
pub mod backends;
mod commands;
pub mod error;
pub mod flags;
pub mod kv;

use std::ffi::OsString;
use std::io::Write as _;

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::args::{Cli, Commands};
use crate::error::{CliError, EXIT_BROKEN_PIPE, EXIT_FAILURE};

/// Runs the CLI with `args` (including the program name) and returns the
/// exit status. Prints errors itself.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    install_panic_hook();
    let args = match to_utf8(args) {
        Ok(a) => a,
        Err(e) => return report(e),
    };
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    }
                }
                _ => report(CliError::usage(clap_one_line(&e, &args))),
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return report(CliError::failure(
                "io",
                format!("starting the runtime: {e}"),
            ));
        }
    };
    let result = runtime.block_on(dispatch(cli.command));
    // Background tasks (stdin writers) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(e) => report(e),
    }
}

async fn dispatch(command: Commands) -> error::CliResult {
    match command {
        Commands::Run(a) => commands::run::run(a).await,
        Commands::Create(a) => commands::create::create(a).await,
        Commands::Exec(a) => commands::exec::exec(a).await,
        Commands::Shell(a) => commands::shell::shell(a).await,
        Commands::Cp(a) => commands::cp::cp(a).await,
        Commands::Ls(a) => commands::ls::ls(a).await,
        Commands::Rm(a) => commands::rm::rm(a).await,
        Commands::Ps(a) => commands::ps::ps(a).await,
        Commands::Start(a) => commands::start::start(a).await,
        Commands::Logs(a) => commands::logs::logs(a).await,
        Commands::Snapshot(a) => commands::lifecycle::snapshot(a).await,
        Commands::Pause(a) => commands::lifecycle::pause(a).await,
        Commands::Resume(a) => commands::lifecycle::resume(a).await,
        Commands::Image { cmd } => commands::image::image(cmd).await,
        Commands::Kit { cmd } => commands::kit::kit(cmd).await,
        Commands::Completions { shell } => commands::docs::completions(shell),
        Commands::Man { dir } => commands::docs::man_pages(&dir),
        Commands::Mcp(a) => commands::mcp::mcp(a).await,
        Commands::Gc(a) => commands::gc::gc(a).await,
        Commands::Serve(a) => commands::serve::serve(a).await,
        Commands::Bench(a) => commands::bench::bench(a).await,
        Commands::Conformance(a) => commands::conformance_wire::dispatch(a).await,
        Commands::Evidence { cmd } => commands::evidence::evidence(cmd).await,
    }
}

fn report(e: CliError) -> i32 {
    // A closed stderr cannot be told anything: the exit status says it.
    let _ = writeln!(std::io::stderr(), "{e}");
    e.exit
}

/// Refuses arguments that are not UTF-8 or contain a NUL byte, naming which.
fn to_utf8(args: Vec<OsString>) -> Result<Vec<String>, CliError> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let s = a
                .into_string()
                .map_err(|a| CliError::usage(format!("argument {i} ({a:?}) is not valid UTF-8")))?;
            if s.contains('\0') {
                return Err(CliError::usage(format!(
                    "argument {i} ({:?}) contains a NUL byte",
                    s.replace('\0', "\\0")
                )));
            }
            Ok(s)
        })
        .collect()
}

/// A clap error as one line, without its `error: ` prefix: the first line
/// of clap's rendering, but for missing arguments, which clap lists on the
/// lines after it, named here; then where help is (`corral run --help`,
/// from the usage line, or from the subcommands `args` name when clap
/// prints none, as for a bad value).
fn clap_one_line(e: &clap::Error, args: &[String]) -> String {
    let rendered = e.render().to_string();
    let message = match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::MissingRequiredArgument, Some(ContextValue::Strings(args))) => {
            let s = if args.len() == 1 { "" } else { "s" };
            format!("missing required argument{s}: {}", args.join(", "))
        }
        _ => {
            let line = rendered
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("invalid arguments");
            line.strip_prefix("error: ").unwrap_or(line).to_string()
        }
    };
    let path = command_path(&rendered).unwrap_or_else(|| subcommand_path(args));
    format!("{message} (see {path} --help)")
}

/// `corral` and the subcommands `args` (after the program name) name,
/// up to the first word that is none.
fn subcommand_path(args: &[String]) -> String {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut words = vec!["corral".to_string()];
    for arg in args.iter().skip(1) {
        let Some(sub) = command.find_subcommand(arg).cloned() else {
            break;
        };
        words.push(arg.clone());
        command = sub;
    }
    words.join(" ")
}

/// The subcommand a clap error is about, from its usage line (`Usage:
/// corral image import [OPTIONS] <FILE>` gives `corral image import`);
/// `None` without one.
fn command_path(rendered: &str) -> Option<String> {
    let words: Vec<&str> = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage:"))
        .map(|usage| {
            usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect()
        })
        .unwrap_or_default();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Whether a panic's message is the standard library's for a `println!`
/// into a closed pipe (`corral ls | head -1`).
fn is_closed_stdout(what: &str) -> bool {
    let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
    what.starts_with("failed printing to stdout")
        && (what.contains(&closed.to_string()) || what.contains("Broken pipe"))
}

/// A panic becomes one error line and exit status 1, never a backtrace.
/// Printing into a closed pipe is no failure: the reader has what it
/// wanted, so the command ends quietly with 141 (128 + SIGPIPE), as `run`
/// and `exec` do.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        // The hook exits before anything unwinds: raw mode ends here.
        commands::tty::restore_after_panic();
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        if is_closed_stdout(&what) {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            CliError::failure(
                "internal",
                format!("corral failed unexpectedly{at}: {what}")
            )
        );
        std::process::exit(EXIT_FAILURE);
    }));
}
