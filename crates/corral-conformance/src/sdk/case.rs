//! The SDK suite's cases, one report line each, and what its report
//! records of a run.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::case::{NoDetail, SuiteCase};
use crate::sdk::options::Check;

/// One case of the SDK suite, in the order the suite runs them. A closed
/// set; each case is one line of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SdkCase {
    /// `get_or_create` twice with one key gives one sandbox; `find` by key
    /// returns it, an unknown key finds nothing.
    CreateFindByKey,
    /// `list` by labels returns the sandbox, carrying the `corral` label.
    ListByLabels,
    /// `run`: exit code, stdout and stderr, output streamed to a callback,
    /// argv commands, stdin given and stdin closed, working directory,
    /// create-time and per-run environment; a non-zero exit is a result,
    /// not an error.
    Commands,
    /// A command that outlives its timeout fails with code `timeout`.
    CommandTimeout,
    /// Hostile values through `sh!` arrive as exactly one argument each.
    DollarEscaping,
    /// Background processes: start, logs, attach by name from a new
    /// handle, kill, wait. Skipped by `processes`.
    Processes,
    /// `files`: write, read, list, stat, mkdir, ranged read, exists,
    /// remove.
    Files,
    /// The file helpers the core builds: `edit`, `search`, `mark` and
    /// `changes`.
    FileHelpers,
    /// `files.write` with mode `0o755` reads back `0o755`. Skipped by
    /// `fileModes`.
    FileModes,
    /// Clone a bare repository in the sandbox, commit and push, and find
    /// the commit in the bare repository's log. Skipped by `gitPush`.
    GitPush,
    /// One preview URL for a port given at create, a refusal for a port
    /// that was not; with `previews` unsupported, the preview must be
    /// refused with `unsupported`.
    Previews,
    /// A real HTTP GET from the host to a server in the sandbox, through
    /// its preview URL. Skipped by `httpProbe` and by `previews`.
    HttpProbe,
    /// `destroy` is idempotent, `connect` then fails with `not_found`, and
    /// nothing labelled by this run remains in `list`.
    Cleanup,
}

impl SdkCase {
    /// Every case, in the order the suite runs them.
    pub const ALL: &'static [SdkCase] = &[
        SdkCase::CreateFindByKey,
        SdkCase::ListByLabels,
        SdkCase::Commands,
        SdkCase::CommandTimeout,
        SdkCase::DollarEscaping,
        SdkCase::Processes,
        SdkCase::Files,
        SdkCase::FileHelpers,
        SdkCase::FileModes,
        SdkCase::GitPush,
        SdkCase::Previews,
        SdkCase::HttpProbe,
        SdkCase::Cleanup,
    ];

    /// The case's name in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            SdkCase::CreateFindByKey => "create-find-by-key",
            SdkCase::ListByLabels => "list-by-labels",
            SdkCase::Commands => "commands",
            SdkCase::CommandTimeout => "command-timeout",
            SdkCase::DollarEscaping => "dollar-escaping",
            SdkCase::Processes => "processes",
            SdkCase::Files => "files",
            SdkCase::FileHelpers => "file-helpers",
            SdkCase::FileModes => "file-modes",
            SdkCase::GitPush => "git-push",
            SdkCase::Previews => "previews",
            SdkCase::HttpProbe => "http-probe",
            SdkCase::Cleanup => "cleanup",
        }
    }

    /// The case called `name`, if any.
    pub fn parse(name: &str) -> Option<SdkCase> {
        SdkCase::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// The declared unsupported checks that skip this case, the first
    /// declared one giving the reason. `previews` does not skip the
    /// `previews` case: it turns it into a check of the refusal.
    pub const fn skipped_by(self) -> &'static [Check] {
        match self {
            SdkCase::Processes => &[Check::Processes],
            SdkCase::FileModes => &[Check::FileModes],
            SdkCase::GitPush => &[Check::GitPush],
            SdkCase::HttpProbe => &[Check::Previews, Check::HttpProbe],
            SdkCase::CreateFindByKey
            | SdkCase::ListByLabels
            | SdkCase::Commands
            | SdkCase::CommandTimeout
            | SdkCase::DollarEscaping
            | SdkCase::Files
            | SdkCase::FileHelpers
            | SdkCase::Previews
            | SdkCase::Cleanup => &[],
        }
    }
}

/// What an SDK report records of its run: the backend's own name
/// (`Backend::name`) and whether the run was allowed to reach real
/// infrastructure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkRun {
    /// The backend's own name (`Backend::name`).
    pub provider: String,
    /// Whether the run was allowed to reach real infrastructure.
    pub live: bool,
}

impl SuiteCase for SdkCase {
    type Run = SdkRun;
    type Detail = NoDetail;

    fn all() -> &'static [Self] {
        SdkCase::ALL
    }

    fn name(self) -> &'static str {
        self.as_str()
    }

    fn detail(self) -> NoDetail {
        NoDetail {}
    }

    fn heading(target: &str, run: &SdkRun) -> String {
        format!(
            "conformance: suite sdk, target {target} (provider {}, live: {})",
            run.provider, run.live
        )
    }
}

impl fmt::Display for SdkCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_have_unique_names_that_round_trip() {
        for case in SdkCase::ALL {
            assert_eq!(SdkCase::parse(case.as_str()), Some(*case));
            let json = serde_json::to_string(case).unwrap();
            assert_eq!(json, format!("\"{case}\""));
        }
        let mut names: Vec<&str> = SdkCase::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SdkCase::ALL.len());
    }

    #[test]
    fn every_skip_key_skips_some_case_and_cleanup_runs_last() {
        for check in Check::ALL {
            if *check == Check::Previews {
                continue;
            }
            assert!(
                SdkCase::ALL.iter().any(|c| c.skipped_by().contains(check)),
                "{check} skips nothing"
            );
        }
        assert_eq!(SdkCase::ALL.last(), Some(&SdkCase::Cleanup));
    }

    // SDK spec, "Every check runs unless you skip it": `gitPush` skips the
    // bare-repository clone, commit and push; `httpProbe` skips the real
    // HTTP request to a preview URL; `previews` expects `preview()` to
    // reject with `unsupported`, and skips the HTTP probe too; `processes`
    // skips the background process checks; `fileModes` skips the
    // permission-bit check for `files.write`. (That the `previews` case
    // then expects the refusal is proven in tests/sdk_memory.rs.)
    #[test]
    fn each_of_the_five_skip_keys_skips_what_the_sdk_spec_says_and_nothing_else() {
        let skipped = |check: Check| -> Vec<SdkCase> {
            SdkCase::ALL
                .iter()
                .copied()
                .filter(|c| c.skipped_by().contains(&check))
                .collect()
        };
        assert_eq!(skipped(Check::GitPush), [SdkCase::GitPush]);
        assert_eq!(skipped(Check::HttpProbe), [SdkCase::HttpProbe]);
        assert_eq!(skipped(Check::Previews), [SdkCase::HttpProbe]);
        assert_eq!(skipped(Check::Processes), [SdkCase::Processes]);
        assert_eq!(skipped(Check::FileModes), [SdkCase::FileModes]);
    }
}
