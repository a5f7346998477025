//! The flags `run` and `create` share, which shape the sandbox: limits,
//! network, binds, ports, secrets, a name. Each value is parsed once,
//! where clap reads it; what a backend cannot enforce is refused before
//! anything is created ([`enforce`]), naming the flag.

pub mod enforce;
pub mod network;
pub mod size;
pub mod volume;

use clap::{Args, ValueEnum};
use corral_backend::{
    BackendError, CreateRequest, Environment, Limits, Network, RequestError, RunAs, SandboxKey,
    Size,
};
use corral_sdk::Redactor;

use crate::error::CliError;
use crate::kv;

pub use volume::Volume;

/// What `run` and `create` ask of the sandbox.
#[derive(Debug, Default, Args)]
pub struct SandboxFlags {
    /// Memory ceiling: bytes, or with a unit k, m, g, t (powers of 1024):
    /// `512m`, `1g`.
    #[arg(long, value_name = "SIZE", value_parser = size::parse)]
    pub memory: Option<u64>,
    /// CPU cores, fractions allowed (`0.5`), enforced as a quota.
    #[arg(long, value_name = "N")]
    pub cpus: Option<f64>,
    /// Most processes (and threads) alive at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pids: Option<u64>,
    /// Writable disk ceiling, as --memory.
    #[arg(long, value_name = "SIZE", value_parser = size::parse)]
    pub disk: Option<u64>,
    /// The network: `none` (loopback only), or `allow=` and a
    /// comma-separated list of `HOST[:PORT]` and CIDR blocks, the only
    /// destinations reachable (the port defaults to 443). Refused where the
    /// backend cannot enforce it, naming what the host lacks.
    #[arg(long, value_name = "POLICY", value_parser = network::parse)]
    pub network: Option<Network>,
    /// Bind the host directory HOST (absolute; symlinks resolved) at PATH
    /// in the sandbox, read-only with `:ro` (repeatable, at most 16). Never
    /// `/`, `/proc`, `/sys` or `/dev` of the host, nor onto `/` or the
    /// sandbox's system (`/etc`, `/usr`, `/bin`, `/lib`…). The linux
    /// backend binds (as root); the others refuse it as unsupported.
    #[arg(long = "volume", short = 'v', value_name = "HOST:PATH[:ro]", value_parser = volume::parse)]
    pub volumes: Vec<Volume>,
    /// A port to reach from outside through a preview URL, which is
    /// printed (repeatable).
    #[arg(long = "port", short = 'p', value_name = "PORT")]
    pub ports: Vec<u16>,
    /// An environment variable whose value is secret: `[REDACTED]` in every
    /// output and error line this corral prints (repeatable).
    #[arg(long = "secret", value_name = "NAME=VALUE")]
    pub secrets: Vec<String>,
    /// Start from this snapshot's files (an id `corral snapshot` printed),
    /// where the backend has snapshots.
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<String>,
    /// A unique name (the sandbox's key): refused if a sandbox has it.
    #[arg(long, visible_alias = "key", value_name = "NAME", value_parser = |s: &str| SandboxKey::new(s))]
    pub name: Option<SandboxKey>,
}

/// Whom `run` runs its command as (`--user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum User {
    /// The sandbox's root (the default).
    Root,
    /// The sandbox's unprivileged user (uid 1000), where the backend has one.
    User,
}

impl From<User> for RunAs {
    fn from(u: User) -> RunAs {
        match u {
            User::Root => RunAs::Root,
            User::User => RunAs::User,
        }
    }
}

/// A create request from the flags, and the redactor of its secrets.
#[derive(Debug)]
pub struct Planned {
    /// What to ask the backend for (labels, image, env and lifetime are
    /// the caller's to add).
    pub request: CreateRequest,
    /// The secrets' values, to redact from every line printed.
    pub redactor: Redactor,
}

impl SandboxFlags {
    /// The create request these flags ask for, with `env` (already parsed)
    /// and the secrets added to it. A secret's name may not also be an
    /// `--env` name. Refuses what [`CreateRequest::validate`] refuses,
    /// naming the flag.
    pub fn plan(&self, mut env: Environment) -> Result<Planned, CliError> {
        let secrets = kv::parse("secret", &self.secrets)?;
        if let Some(name) = secrets.keys().find(|k| env.get(k.as_str()).is_some()) {
            return Err(CliError::usage(format!(
                "--secret {name}: {name:?} is also given with --env"
            )));
        }
        let redactor = Redactor::new(secrets.values().cloned());
        let secrets = Environment::try_from(secrets)
            .map_err(|e| CliError::usage(redactor.redact(&format!("--secret: {e}"))))?;
        env.extend(secrets);
        let request = CreateRequest {
            size: Size {
                cpus: self.cpus,
                memory_bytes: self.memory,
                disk_bytes: self.disk,
            },
            limits: Limits { pids: self.pids },
            network: self.network.clone().unwrap_or_default(),
            ports: self.ports.clone(),
            key: self.name.clone(),
            snapshot: self.snapshot.clone(),
            env,
            binds: volume::binds(&self.volumes)?,
            ..CreateRequest::default()
        };
        // The request's own check, once, here: its refusal names the flag.
        if let Err(e) = request.validate() {
            return Err(CliError::usage(format!("{}: {}", flag_of(&e), e.message())));
        }
        Ok(Planned { request, redactor })
    }
}

/// The flag a [`CreateRequest::validate`] refusal is about.
fn flag_of(e: &BackendError) -> &'static str {
    match e {
        BackendError::Request(RequestError::Cpus { .. }) => "--cpus",
        BackendError::Request(RequestError::PortZero | RequestError::TooManyPorts { .. }) => {
            "--port"
        }
        _ => "the sandbox's flags",
    }
}
