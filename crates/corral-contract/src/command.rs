//! `execute`'s request: one bounded command.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    Argv, Environment, InstanceId, InvalidValue, OutputLimitBytes, SandboxPath, ShellScript,
    StdinBytes, TimeoutSeconds,
};

/// What to run: an argument vector **xor** a shell script.
///
/// On the wire this is not a nested object: a command carries exactly one of
/// the keys `argv` and `shell`; both or neither is refused at decode.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CommandLine {
    /// Run a program with arguments, no shell.
    Argv {
        /// The program and its arguments.
        argv: Argv,
    },
    /// Run a script with the instance's `/bin/sh -c`.
    Shell {
        /// The script.
        shell: ShellScript,
    },
}

/// One command for `execute`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawCommand", into = "RawCommand")]
pub struct SandboxCommand {
    /// What to run.
    pub command: CommandLine,
    /// Bytes written to the command's stdin, then closed; `None` is an
    /// immediately closed stdin.
    pub stdin: Option<StdinBytes>,
    /// The provider ends the command after this many seconds (exit cause
    /// `timed_out`).
    pub timeout_seconds: TimeoutSeconds,
    /// The most bytes kept per stream.
    pub output_limit_bytes: OutputLimitBytes,
    /// Where the command starts; `None` is the provider's default.
    pub working_directory: Option<SandboxPath>,
    /// Extra environment variables.
    pub environment: Environment,
}

impl SandboxCommand {
    /// A command with no stdin, no working directory and no extra environment.
    pub fn new(
        command: CommandLine,
        timeout_seconds: TimeoutSeconds,
        output_limit_bytes: OutputLimitBytes,
    ) -> Self {
        Self {
            command,
            stdin: None,
            timeout_seconds,
            output_limit_bytes,
            working_directory: None,
            environment: Environment::new(),
        }
    }
}

/// The wire shape of [`SandboxCommand`].
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxCommand")]
struct RawCommand {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    argv: Option<Argv>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shell: Option<ShellScript>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdin: Option<StdinBytes>,
    timeout_seconds: TimeoutSeconds,
    output_limit_bytes: OutputLimitBytes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    working_directory: Option<SandboxPath>,
    #[serde(default)]
    environment: Environment,
}

impl TryFrom<RawCommand> for SandboxCommand {
    type Error = InvalidValue;
    fn try_from(raw: RawCommand) -> Result<Self, Self::Error> {
        let command = match (raw.argv, raw.shell) {
            (Some(argv), None) => CommandLine::Argv { argv },
            (None, Some(shell)) => CommandLine::Shell { shell },
            (Some(_), Some(_)) => {
                return Err(InvalidValue::rule(
                    "command",
                    "has both argv and shell (exactly one is required)",
                ));
            }
            (None, None) => {
                return Err(InvalidValue::rule(
                    "command",
                    "has neither argv nor shell (exactly one is required)",
                ));
            }
        };
        Ok(Self {
            command,
            stdin: raw.stdin,
            timeout_seconds: raw.timeout_seconds,
            output_limit_bytes: raw.output_limit_bytes,
            working_directory: raw.working_directory,
            environment: raw.environment,
        })
    }
}

impl From<SandboxCommand> for RawCommand {
    fn from(c: SandboxCommand) -> Self {
        let (argv, shell) = match c.command {
            CommandLine::Argv { argv } => (Some(argv), None),
            CommandLine::Shell { shell } => (None, Some(shell)),
        };
        Self {
            argv,
            shell,
            stdin: c.stdin,
            timeout_seconds: c.timeout_seconds,
            output_limit_bytes: c.output_limit_bytes,
            working_directory: c.working_directory,
            environment: c.environment,
        }
    }
}

impl JsonSchema for SandboxCommand {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SandboxCommand".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = RawCommand::json_schema(generator);
        schema.insert(
            "oneOf".into(),
            serde_json::json!([{ "required": ["argv"] }, { "required": ["shell"] }]),
        );
        schema
    }
}

/// `execute`: run one command in an active instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The command.
    pub command: SandboxCommand,
}
