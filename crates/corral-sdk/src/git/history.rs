//! `git.log`.

use serde::Serialize;

use super::{Git, GitRun};
use crate::Operation;
use crate::error::Result;

/// Field and record separators in the log format (unit and record separators).
const FORMAT: &str = "--format=%H%x1f%an%x1f%ae%x1f%at%x1f%s%x1e";

/// One commit of a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    /// The full hash.
    pub hash: String,
    /// The author's name.
    pub author_name: String,
    /// The author's e-mail address.
    pub author_email: String,
    /// The author date, epoch milliseconds.
    pub timestamp_ms: u64,
    /// The first line of the message.
    pub subject: String,
}

/// Which commits to list.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// At most this many (default: all).
    pub max_count: Option<u32>,
    /// Start from this revision instead of HEAD.
    pub revision: Option<String>,
}

impl Git<'_> {
    /// The history from HEAD (or `options.revision`), newest first. Empty
    /// for a repository without commits.
    pub async fn log(&self, dir: &str, options: LogOptions) -> Result<Vec<Commit>> {
        const OP: Operation = Operation::GitLog;
        self.check_dir(OP, dir)?;
        let mut run = GitRun::new(OP, dir, &["log", FORMAT]);
        if let Some(n) = options.max_count {
            run = run.arg(format!("--max-count={n}"));
        }
        if let Some(rev) = &options.revision {
            self.check_name(OP, "revision", rev)?;
            run = run.arg(rev);
        }
        let run = run.arg("--");
        let out = self.exec_status(run).await?;
        if !out.success() {
            if options.revision.is_none()
                && out.stderr_text().contains("does not have any commits yet")
            {
                return Ok(Vec::new());
            }
            return Err(self.exit_error(OP, &out));
        }
        parse(&out.stdout_text()).map_err(|why| {
            self.sandbox.fail(
                corral_backend::ErrorCode::Provider,
                OP,
                format!("git log printed something unexpected: {why}"),
            )
        })
    }
}

/// Parses records of [`FORMAT`].
pub(crate) fn parse(text: &str) -> std::result::Result<Vec<Commit>, String> {
    text.split('\x1e')
        .map(|r| r.trim_start_matches('\n'))
        .filter(|r| !r.is_empty())
        .map(|record| {
            let f: Vec<&str> = record.split('\x1f').collect();
            let [hash, name, email, at, subject] = f[..] else {
                return Err(format!("record {record:?} does not have 5 fields"));
            };
            let secs: u64 = at.parse().map_err(|_| format!("bad timestamp {at:?}"))?;
            Ok(Commit {
                hash: hash.to_string(),
                author_name: name.to_string(),
                author_email: email.to_string(),
                timestamp_ms: secs * 1000,
                subject: subject.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records() {
        let text = "abc\x1fAda\x1fada@x\x1f1700000000\x1fsecond\x1e\ndef\x1fBo\x1fbo@x\x1f1600000000\x1ffirst: a; b\x1e\n";
        let log = parse(text).unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].hash, "abc");
        assert_eq!(log[0].timestamp_ms, 1_700_000_000_000);
        assert_eq!(log[1].subject, "first: a; b");
        assert!(parse("").unwrap().is_empty());
        assert!(parse("abc\x1fonly\x1e").is_err());
    }
}
