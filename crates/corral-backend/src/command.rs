//! [`Command`]: what `exec`, `start_process` and a terminal run, valid from
//! the moment it exists.
//!
//! A command is checked once, where it is made ([`Command::argv`],
//! [`Command::shell`], or decoding): an empty argv or program, a blank
//! script, more than [`MAX_ARGS`] arguments, an argument longer than
//! [`MAX_ARG_BYTES`] or holding a NUL byte are refused there with a
//! [`RequestError`] (`invalid_input`). Every backend takes it as it is.

use serde::{Deserialize, Serialize};

use crate::error::RequestError;

/// Most arguments one command may have (the contract's bound).
pub const MAX_ARGS: usize = corral_contract::bounds::MAX_ARGUMENTS;
/// Longest one argument may be, in bytes (the contract's bound).
pub const MAX_ARG_BYTES: usize = corral_contract::bounds::MAX_ARGUMENT_BYTES;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// An argument vector; `argv[0]` is looked up on `PATH`.
    Argv(CommandArgv),
    /// A POSIX `sh -c` script.
    Shell(CommandScript),
}

impl Command {
    /// An argv command from anything string-like; refused as
    /// [`CommandArgv::new`] refuses it.
    pub fn argv<I, S>(args: I) -> Result<Self, RequestError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CommandArgv::new(args).map(Command::Argv)
    }

    /// A shell command; refused as [`CommandScript::new`] refuses it.
    pub fn shell(script: impl Into<String>) -> Result<Self, RequestError> {
        CommandScript::new(script).map(Command::Shell)
    }

    /// The argument vector this command runs as (`sh -c SCRIPT` for a shell command).
    pub fn to_argv(&self) -> Vec<String> {
        match self {
            Command::Argv(v) => v.as_slice().to_vec(),
            Command::Shell(s) => vec!["sh".into(), "-c".into(), s.as_str().to_owned()],
        }
    }
}

impl From<CommandArgv> for Command {
    fn from(argv: CommandArgv) -> Self {
        Command::Argv(argv)
    }
}

impl From<CommandScript> for Command {
    fn from(script: CommandScript) -> Self {
        Command::Shell(script)
    }
}

/// An argument vector: 1 to [`MAX_ARGS`] arguments, each at most
/// [`MAX_ARG_BYTES`] bytes with no NUL byte, the first (the program) not
/// empty. On the wire, a JSON array of strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct CommandArgv(Vec<String>);

impl CommandArgv {
    /// Checks an argument vector: [`RequestError::EmptyArgv`],
    /// [`RequestError::TooManyArguments`], then each argument in order
    /// ([`RequestError::ArgumentNul`], [`RequestError::ArgumentTooLong`]),
    /// then [`RequestError::EmptyProgram`].
    pub fn new<I, S>(args: I) -> Result<Self, RequestError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::try_from(args.into_iter().map(Into::into).collect::<Vec<String>>())
    }

    /// The program (the first argument, never empty).
    pub fn program(&self) -> &str {
        &self.0[0]
    }

    /// Every argument, the program first.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// Unwraps the arguments, the program first.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

impl TryFrom<Vec<String>> for CommandArgv {
    type Error = RequestError;

    fn try_from(v: Vec<String>) -> Result<Self, RequestError> {
        if v.is_empty() {
            return Err(RequestError::EmptyArgv);
        }
        if v.len() > MAX_ARGS {
            return Err(RequestError::TooManyArguments {
                count: v.len(),
                max: MAX_ARGS,
            });
        }
        for (i, a) in v.iter().enumerate() {
            check_arg(i, a)?;
        }
        if v[0].is_empty() {
            return Err(RequestError::EmptyProgram);
        }
        Ok(Self(v))
    }
}

impl Serialize for CommandArgv {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A POSIX `sh -c` script: not blank, at most [`MAX_ARG_BYTES`] bytes, no
/// NUL byte (it is `sh`'s third argument). On the wire, a JSON string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct CommandScript(String);

impl CommandScript {
    /// Checks a script: [`RequestError::EmptyScript`] for one that is empty
    /// or only whitespace, then [`RequestError::ArgumentNul`] and
    /// [`RequestError::ArgumentTooLong`] (as argument 2 of `sh -c SCRIPT`).
    pub fn new(script: impl Into<String>) -> Result<Self, RequestError> {
        Self::try_from(script.into())
    }

    /// The script.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Unwraps the script.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl TryFrom<String> for CommandScript {
    type Error = RequestError;

    fn try_from(s: String) -> Result<Self, RequestError> {
        if s.trim().is_empty() {
            return Err(RequestError::EmptyScript);
        }
        check_arg(2, &s)?;
        Ok(Self(s))
    }
}

impl Serialize for CommandScript {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

fn check_arg(i: usize, a: &str) -> Result<(), RequestError> {
    if a.contains('\0') {
        return Err(RequestError::ArgumentNul { index: i });
    }
    if a.len() > MAX_ARG_BYTES {
        return Err(RequestError::ArgumentTooLong {
            index: i,
            len: a.len(),
            max: MAX_ARG_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every malformed command is refused where it is made, with the typed
    /// error (and so the `invalid_input` code and message) `validate` gave.
    #[test]
    fn a_malformed_command_cannot_be_made() {
        let long = "x".repeat(MAX_ARG_BYTES + 1);
        let rows: [(&str, Result<Command, RequestError>, RequestError); 8] = [
            (
                "empty argv",
                Command::argv(Vec::<String>::new()),
                RequestError::EmptyArgv,
            ),
            (
                "empty program",
                Command::argv([""]),
                RequestError::EmptyProgram,
            ),
            (
                "NUL before an empty program",
                Command::argv(["", "a\0"]),
                RequestError::ArgumentNul { index: 1 },
            ),
            (
                "too many",
                Command::argv(vec!["x"; MAX_ARGS + 1]),
                RequestError::TooManyArguments {
                    count: MAX_ARGS + 1,
                    max: MAX_ARGS,
                },
            ),
            (
                "too long",
                Command::argv(["echo", long.as_str()]),
                RequestError::ArgumentTooLong {
                    index: 1,
                    len: MAX_ARG_BYTES + 1,
                    max: MAX_ARG_BYTES,
                },
            ),
            (
                "blank script",
                Command::shell(" \n\t"),
                RequestError::EmptyScript,
            ),
            (
                "NUL in a script",
                Command::shell("echo a\0b"),
                RequestError::ArgumentNul { index: 2 },
            ),
            (
                "long script",
                Command::shell(long.clone()),
                RequestError::ArgumentTooLong {
                    index: 2,
                    len: MAX_ARG_BYTES + 1,
                    max: MAX_ARG_BYTES,
                },
            ),
        ];
        for (what, made, refused) in rows {
            assert_eq!(made, Err(refused.clone()), "{what}");
            assert_eq!(
                crate::BackendError::from(refused).code(),
                crate::ErrorCode::InvalidInput,
                "{what}"
            );
        }
        assert!(Command::argv(vec!["x"; MAX_ARGS]).is_ok());
        assert!(
            Command::argv(["x", ""]).is_ok(),
            "only the program must be non-empty"
        );
        assert!(Command::shell("x".repeat(MAX_ARG_BYTES)).is_ok());
    }

    /// The wire shape is the enum's: `{"argv":[…]}` or `{"shell":"…"}`.
    #[test]
    fn the_wire_shape_is_unchanged_and_decoding_checks() {
        let argv = Command::argv(["echo", "hi"]).unwrap();
        let shell = Command::shell("echo hi").unwrap();
        assert_eq!(
            serde_json::to_string(&argv).unwrap(),
            r#"{"argv":["echo","hi"]}"#
        );
        assert_eq!(
            serde_json::to_string(&shell).unwrap(),
            r#"{"shell":"echo hi"}"#
        );
        for c in [argv, shell] {
            let back: Command = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            assert_eq!(back, c);
        }
        for (body, message) in [
            (r#"{"argv":[]}"#, "command: argv is empty"),
            (r#"{"argv":[""]}"#, "command: argv[0] is empty"),
            (
                r#"{"argv":["a\u0000"]}"#,
                "command: argument 0 contains a NUL byte",
            ),
            (r#"{"shell":"  "}"#, "command: shell script is empty"),
        ] {
            let e = serde_json::from_str::<Command>(body).unwrap_err();
            assert!(e.to_string().contains(message), "{body}: {e}");
        }
    }
}
