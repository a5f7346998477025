//! Which error code a failed git run gets, from its exit code and message.

use corral_backend::ErrorCode;

/// The code for a git run that exited with `code` and wrote `stderr`.
pub(crate) fn classify(code: i32, stderr: &str) -> ErrorCode {
    if code == 127 && !stderr.contains("fatal:") {
        return ErrorCode::Unavailable;
    }
    let s = stderr.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| s.contains(n));
    if any(&[
        "authentication failed",
        "could not read username",
        "could not read password",
        "invalid username or password",
        "the requested url returned error: 401",
        "the requested url returned error: 403",
        "permission denied (publickey",
    ]) {
        ErrorCode::Auth
    } else if any(&[
        "could not resolve host",
        "connection refused",
        "connection timed out",
        "unable to access",
        "network is unreachable",
        "could not connect",
    ]) {
        ErrorCode::Unavailable
    } else if any(&[
        "not a git repository",
        "does not exist",
        "did not match any",
        "not found",
        "unknown revision",
        "invalid reference",
        "bad revision",
        "couldn't find remote ref",
        "does not appear to be a git repository",
        "no such file or directory",
    ]) {
        ErrorCode::NotFound
    } else {
        ErrorCode::Conflict
    }
}

/// Git's message on one line: its `fatal:`/`error:` lines when there are
/// any, otherwise every non-empty line, joined with `; ` and capped.
pub(crate) fn one_line(stderr: &str) -> String {
    const MAX: usize = 600;
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let important: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("fatal:") || l.starts_with("error:") || l.starts_with("! ["))
        .collect();
    let chosen = if important.is_empty() {
        lines
    } else {
        important
    };
    let mut text = chosen.join("; ");
    if text.len() > MAX {
        let mut cut = MAX;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_git_messages() {
        let c = |s: &str| classify(128, s);
        assert_eq!(
            c("fatal: Authentication failed for 'http://h/r'"),
            ErrorCode::Auth
        );
        assert_eq!(
            c("fatal: unable to access 'http://h/': Could not resolve host: h"),
            ErrorCode::Unavailable
        );
        assert_eq!(
            c("fatal: not a git repository (or any of the parent directories): .git"),
            ErrorCode::NotFound
        );
        assert_eq!(
            c("error: pathspec 'x' did not match any file(s) known to git"),
            ErrorCode::NotFound
        );
        assert_eq!(
            c(" ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs"),
            ErrorCode::Conflict
        );
        assert_eq!(classify(127, "sh: git: not found"), ErrorCode::Unavailable);
    }

    #[test]
    fn one_line_prefers_fatal_and_error_lines() {
        assert_eq!(
            one_line("hint: do this\nfatal: bad thing\n\nhint: more\n"),
            "fatal: bad thing"
        );
        assert_eq!(one_line("a\n\nb\n"), "a; b");
        assert!(one_line(&"x".repeat(2000)).len() < 700);
    }
}
