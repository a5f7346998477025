//! `sh!` and [`ShellScript`]: shell commands whose interpolations are
//! quoted for POSIX `sh`, and [`IntoCommand`], what `run` accepts.

use std::fmt::Display;

use corral_backend::Command;

/// Quotes `value` as one POSIX `sh` word: wrapped in single quotes, each
/// `'` written as `'\''`. Inside single quotes `sh` gives no character a
/// meaning (`$`, backticks, `\`, globs, newlines stay literal), so the
/// command receives `value` as exactly one argument. A value that starts
/// with `-` is still one argument, but the program may read it as an
/// option: put `--` before it where the program supports that.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A shell script built by [`sh!`](crate::sh!): literal template text with
/// every interpolated value single-quoted.
///
/// A value holding a NUL byte cannot be passed to a command at all; the
/// script then carries that error instead, and running it fails with
/// `invalid_input` before anything reaches the backend (so `sh!` itself is
/// infallible and reads like `format!`). [`ShellScript::script`] shows the
/// error early.
#[derive(Clone, PartialEq, Eq)]
pub struct ShellScript {
    script: Result<String, String>,
}

impl std::fmt::Debug for ShellScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.script {
            Ok(s) => f.debug_tuple("ShellScript").field(s).finish(),
            Err(e) => f.debug_tuple("ShellScript::Invalid").field(e).finish(),
        }
    }
}

impl ShellScript {
    /// An empty builder (what `sh!` expands to).
    #[doc(hidden)]
    pub fn builder() -> ShellScriptBuilder {
        ShellScriptBuilder {
            script: String::new(),
            values: 0,
            error: None,
        }
    }

    /// The script, or why it cannot run (a NUL byte).
    pub fn script(&self) -> Result<&str, &str> {
        match &self.script {
            Ok(s) => Ok(s),
            Err(e) => Err(e),
        }
    }
}

/// Builds a [`ShellScript`]; used by the code `sh!` expands to.
#[doc(hidden)]
#[derive(Debug)]
pub struct ShellScriptBuilder {
    script: String,
    values: usize,
    error: Option<String>,
}

impl ShellScriptBuilder {
    /// Appends template text as written.
    pub fn text(mut self, text: &str) -> Self {
        if text.contains('\0') && self.error.is_none() {
            self.error = Some("sh!: the template contains a NUL byte".into());
        }
        self.script.push_str(text);
        self
    }

    /// Appends one value as one quoted word.
    pub fn arg<T: Display + ?Sized>(mut self, value: &T) -> Self {
        let value = value.to_string();
        self.values += 1;
        if value.contains('\0') && self.error.is_none() {
            // The value itself is not shown: it may be a secret.
            self.error = Some(format!(
                "sh!: interpolated value {} contains a NUL byte, which no command argument can hold",
                self.values
            ));
        }
        self.script.push_str(&quote(&value));
        self
    }

    /// The finished script.
    pub fn build(self) -> ShellScript {
        ShellScript {
            script: match self.error {
                Some(e) => Err(e),
                None => Ok(self.script),
            },
        }
    }
}

/// What [`Sandbox::run`](crate::Sandbox::run) accepts: a shell script
/// (`&str`, `String`, [`ShellScript`]) or a [`Command`].
pub trait IntoCommand {
    /// The command, or a one-line reason it is invalid.
    fn into_command(self) -> Result<Command, String>;
}

impl IntoCommand for &str {
    fn into_command(self) -> Result<Command, String> {
        Command::shell(self).map_err(|e| e.to_string())
    }
}

impl IntoCommand for &String {
    fn into_command(self) -> Result<Command, String> {
        Command::shell(self.as_str()).map_err(|e| e.to_string())
    }
}

impl IntoCommand for String {
    fn into_command(self) -> Result<Command, String> {
        Command::shell(self).map_err(|e| e.to_string())
    }
}

impl IntoCommand for Command {
    fn into_command(self) -> Result<Command, String> {
        Ok(self)
    }
}

impl IntoCommand for ShellScript {
    fn into_command(self) -> Result<Command, String> {
        Command::shell(self.script?).map_err(|e| e.to_string())
    }
}

impl IntoCommand for &ShellScript {
    fn into_command(self) -> Result<Command, String> {
        self.clone().into_command()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_single_quotes() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$x `y`"), "'$x `y`'");
    }

    #[test]
    fn nul_makes_an_invalid_script() {
        let s = ShellScript::builder().text("echo ").arg("a\0b").build();
        let err = s.script().unwrap_err();
        assert!(err.contains("value 1 contains a NUL byte"), "{err}");
        assert!(s.into_command().is_err());
    }
}
