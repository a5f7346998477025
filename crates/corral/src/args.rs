//! The command line, as clap parses it.

use clap::{Args, Parser, Subcommand};

/// corral — run untrusted code in sandboxes.
#[derive(Debug, Parser)]
#[command(name = "corral", version, about, disable_help_subcommand = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Commands,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Create a sandbox, run one command in it with live output, exit with its
    /// exit code, and destroy the sandbox (also on Ctrl-C; `--keep` leaves it).
    ///
    /// Exit status: the command's (128 + n when signal n killed it), 124
    /// after --timeout, 128 + n after corral caught signal n (SIGINT 130,
    /// SIGTERM 143, SIGHUP 129, SIGQUIT 131, SIGUSR1 138, SIGALRM 142), 141
    /// (128 + SIGPIPE) when stdout or stderr was a pipe its reader closed
    /// (`corral run -- yes | head -1`): the command is killed, the sandbox
    /// destroyed. 2 for bad input, 1 for other failures.
    Run(RunArgs),
    /// Create a sandbox and print its id, then `PORT URL` for each `--port`
    /// (not on `--backend memory`, whose sandboxes end with the process
    /// that made them).
    Create(CreateArgs),
    /// Run a command in an existing sandbox.
    ///
    /// Exit status as for `run`: the command's, 124 after --timeout, 128 + n
    /// after corral caught signal n, 141 when stdout or stderr was a pipe
    /// its reader closed; in the last two the command's process group is
    /// killed and the sandbox stays.
    Exec(ExecArgs),
    /// Open an interactive shell (or `-- CMD`) on a terminal of an existing
    /// sandbox: by default the image's shell, bash where present, else sh.
    ///
    /// Exit status: the shell's, 128 + n after corral caught signal n.
    /// The host terminal is in raw mode while attached (Ctrl-C goes to the
    /// sandbox) and restored on every exit. Stdin must be a terminal.
    Shell(ShellArgs),
    /// Copy a file between the host and a sandbox: `ID:/path` names a
    /// sandbox path, `-` is stdin or stdout.
    Cp(CpArgs),
    /// List the sandboxes of every backend on this host (a table, `--json`,
    /// or ids with `-q`).
    Ls(LsArgs),
    /// Destroy sandboxes.
    Rm(RmArgs),
    /// List a sandbox's background processes (those `corral start` began).
    Ps(PsArgs),
    /// Start a background process in a sandbox; it outlives this command
    /// (`corral logs ID NAME` shows its output, `corral ps ID` lists it).
    Start(StartArgs),
    /// Print a background process's output so far; `-f` follows it until
    /// the process ends or Ctrl-C.
    Logs(LogsArgs),
    /// Capture a sandbox's files as a snapshot and print the snapshot's id.
    Snapshot(SandboxIdArgs),
    /// Freeze every process of a sandbox until `corral resume`.
    Pause(SandboxIdArgs),
    /// Thaw a paused sandbox.
    Resume(SandboxIdArgs),
    /// Run a conformance suite against a backend, or the contract suite
    /// against a corral-wire provider, and report each case as it settles:
    /// passed, failed, or skipped with its reason. Exit 0 only when nothing
    /// failed.
    Conformance(ConformanceArgs),
    /// Make the ed25519 key pair that signs conformance evidence, and
    /// verify signed evidence.
    Evidence {
        /// What to do with evidence.
        #[command(subcommand)]
        cmd: crate::commands::evidence::EvidenceCommand,
    },
    /// Measure sandbox start, exec and read costs side by side with their
    /// peers (fork+exec, unshare, bwrap, docker), and the wire's costs
    /// beside in-process calls, as medians and ratios.
    Bench(BenchArgs),
    /// Reclaim what crashed corral processes left: sandboxes whose PID 1 or
    /// creator is gone, their mounts, cgroups, network links and processes.
    /// Live sandboxes are never touched.
    Gc(GcArgs),
    /// Serve the agent tools (run, read_file, write_file, edit_file, search,
    /// list_files) as an MCP server over stdio: one sandbox per session,
    /// destroyed when the session ends.
    Mcp(McpArgs),
    /// Serve a backend's sandboxes to other machines over corral-wire
    /// (HTTP + WebSocket, over TLS with --tls-cert and --tls-key), until
    /// SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Manage the linux backend's image store: import OCI layouts and
    /// `docker save` archives, list, remove.
    Image {
        /// What to do with images.
        #[command(subcommand)]
        cmd: crate::commands::image::ImageCommand,
    },
    /// Print the shell completion script for SHELL (bash, zsh, fish,
    /// elvish, powershell) on stdout, e.g. `corral completions bash >
    /// /etc/bash_completion.d/corral`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (`corral.1` and one `corral-COMMAND.1` per
    /// command, roff) into DIR, e.g. `corral man /usr/local/share/man/man1`.
    Man {
        /// The directory to write the pages into (made if missing).
        dir: std::path::PathBuf,
    },
    /// The author kit: write the JSON Schemas and golden vectors generated
    /// from the contract types, or check a directory against them.
    Kit {
        /// What to do with the kit.
        #[command(subcommand)]
        cmd: crate::commands::kit::KitCommand,
    },
}

/// Options shared by commands that pick a backend.
#[derive(Debug, Args)]
pub struct BackendArg {
    /// The backend: `linux` (the default where this host can run it, else
    /// `local`), `local`, `memory`, `docker`, or `remote+http(s)://HOST:PORT`
    /// (a `corral serve`; the token file in `CORRAL_TOKEN_FILE`).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
}

/// `corral run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// An environment variable for the command, `K=V` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// Kill the command and fail after this many seconds (the command's
    /// timeout; on `create`, --timeout is the sandbox's lifetime).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Working directory inside the sandbox (absolute).
    #[arg(long, short = 'w', visible_alias = "workdir", value_name = "DIR")]
    pub cwd: Option<String>,
    /// A label for the sandbox, `K=V` (repeatable).
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// The image to run on (`host` by default; see `corral image`).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// What the sandbox gets: limits, network, binds, ports, secrets, name.
    #[command(flatten)]
    pub sandbox: crate::flags::SandboxFlags,
    /// Whom the command runs as: `root` (default) or `user` (uid 1000).
    #[arg(long, value_enum, value_name = "WHO")]
    pub user: Option<crate::flags::User>,
    /// Leave the sandbox when the command ends and print its id on stderr.
    #[arg(long)]
    pub keep: bool,
    /// Keep stdin open and forward it to the command (EOF closes its stdin).
    #[arg(short = 'i', long)]
    pub interactive: bool,
    /// Run the command on a terminal (with `-i`: `-it`): raw mode, window
    /// size and resizes passed on, Ctrl-C to the command; stdin must be a
    /// terminal.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `corral create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// A label, `K=V` (repeatable).
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// An environment variable every command gets, `K=V` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// The image to run on (`host` by default; see `corral image`).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// What the sandbox gets: limits, network, binds, ports, secrets, name.
    #[command(flatten)]
    pub sandbox: crate::flags::SandboxFlags,
    /// Destroy the sandbox this many seconds after it is created (its
    /// lifetime; on `run`, --timeout is the command's), where the backend
    /// can.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
}

/// `corral exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
    /// An environment variable for the command, `K=V` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// Kill the command and fail after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Working directory inside the sandbox (absolute).
    #[arg(long, short = 'w', visible_alias = "workdir", value_name = "DIR")]
    pub cwd: Option<String>,
    /// Keep stdin open and forward it to the command (EOF closes its
    /// stdin); without it stdin is not read.
    #[arg(short = 'i', long)]
    pub interactive: bool,
    /// Run the command on a terminal, with `-i` (`-it`), as `corral shell
    /// ID -- CMD` does.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `corral shell`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
    /// An environment variable for the shell, `K=V` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// The program to run instead of the shell, and its arguments.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `corral cp`.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Source: a host path, `-` (stdin), or `ID:/path`.
    pub src: String,
    /// Destination: a host path, `-` (stdout), or `ID:/path`.
    pub dst: String,
}

/// `corral ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only this backend's sandboxes (default: every backend's on this
    /// host: linux, local, docker).
    #[command(flatten)]
    pub backend: BackendArg,
    /// Only sandboxes with this label, `K=V` (repeatable).
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Print JSON (one array) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the ids alone, one a line.
    #[arg(long, short = 'q', conflicts_with = "json")]
    pub quiet: bool,
}

/// `corral rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// Sandbox ids.
    #[arg(required = true, value_name = "ID")]
    pub ids: Vec<String>,
}

/// `corral conformance`.
#[derive(Debug, Default, Args)]
pub struct ConformanceArgs {
    /// The backend to hold to the suite: `memory`, `minimal` (contract
    /// suite only), `local`, `linux`, `docker`, or (SDK suite only)
    /// `remote+http(s)://HOST:PORT` with the token file in `CORRAL_TOKEN_FILE`.
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// The suite: `contract` (default) or `sdk`.
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<String>,
    /// Also write the evidence report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Run the contract suite against this corral-wire provider,
    /// `http://HOST:PORT` or `https://HOST:PORT` (verified against the
    /// system's roots and `CORRAL_CA_FILE`), instead of a backend.
    #[arg(long, value_name = "URL", conflicts_with = "backend")]
    pub provider: Option<String>,
    /// The file holding the provider's bearer token (with `--provider`).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Sign the evidence `--json` writes with this ed25519 secret key file
    /// (with `--provider`; see `corral evidence keygen`).
    #[arg(long, value_name = "KEYFILE")]
    pub sign: Option<std::path::PathBuf>,
    /// A destination the sandboxes can reach, `HOST:PORT`, for the egress
    /// cases (with `--egress-denied`; with `--provider` or `--backend
    /// linux`). Without the two, the cases that need them are skipped,
    /// saying so.
    #[arg(long, value_name = "HOST:PORT")]
    pub egress_allowed: Option<String>,
    /// A destination the sandboxes could route to but must not reach,
    /// `HOST:PORT`, for the egress cases (with `--egress-allowed`).
    #[arg(long, value_name = "HOST:PORT")]
    pub egress_denied: Option<String>,
}

/// `corral bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Also write every figure as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Iterations per row (default: sized per row so the run takes under a minute).
    #[arg(long, value_name = "N")]
    pub iterations: Option<u32>,
    /// Only rows whose name or group starts with this (repeatable); each
    /// group's floor always runs too.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
    /// Idle linux sandboxes the density row keeps (default 100).
    #[arg(long, value_name = "N")]
    pub density: Option<u32>,
    /// Execs started at once through a server on loopback in the
    /// concurrent-exec row (default 100).
    #[arg(long, value_name = "M")]
    pub concurrent_execs: Option<u32>,
}

/// `corral gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also destroy `corral`-labelled sandboxes idle for at least this long
    /// (`90s`, `30m`, `2h`, `1d`, `1h30m`); never one with a run in progress.
    #[arg(long, value_name = "DURATION")]
    pub idle: Option<String>,
    /// The backend for `--idle` (default: local, and linux where it can run).
    #[arg(long, value_name = "NAME", requires = "idle")]
    pub backend: Option<String>,
}

/// `corral mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
}

/// `corral serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The backend to host: `memory`, `local`, `linux` or `docker`.
    #[arg(long, value_name = "NAME")]
    pub backend: String,
    /// The address to listen on, `HOST:PORT` (port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// A file holding the bearer token clients must present (16 to 4096
    /// visible ASCII bytes). Without it a token is generated, shaped as an
    /// E2B API key (`e2b_` and 40 hex digits), and printed.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Connections served at once (more wait in the kernel's backlog).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// Connections served at once from one peer address (more are closed).
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_per_peer: usize,
    /// Seconds a connection may take to send a request's head (an idle
    /// connection is closed after them) and, over TLS, its handshake.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub head_deadline: u64,
    /// Serve over TLS with this certificate chain (PEM, the server's
    /// certificate first); needs --tls-key.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Serve plain HTTP on an address that is not loopback, with a warning
    /// (the token and every request cross the network in clear). Without
    /// TLS such an address is refused.
    #[arg(long)]
    pub insecure_plain_http: bool,
}

/// `corral ps`.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
    /// Print JSON (one array) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the process names alone, one a line.
    #[arg(long, short = 'q', conflicts_with = "json")]
    pub quiet: bool,
}

/// `corral start`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
    /// The process's name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// An environment variable for the process, `K=V` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// Working directory inside the sandbox (absolute).
    #[arg(long, short = 'w', visible_alias = "workdir", value_name = "DIR")]
    pub cwd: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `corral logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
    /// The process's name (as given to `corral start --name`).
    pub name: String,
    /// Keep printing new output until the process ends (or Ctrl-C).
    #[arg(long, short = 'f')]
    pub follow: bool,
}

/// A command that takes one sandbox: `snapshot`, `pause`, `resume`.
#[derive(Debug, Args)]
pub struct SandboxIdArgs {
    /// Which backend.
    #[command(flatten)]
    pub backend: BackendArg,
    /// The sandbox id.
    pub id: String,
}
