//! What a run of the SDK suite is told: [`SdkConformanceOptions`] and the
//! closed set of checks a runtime may declare it cannot pass ([`Check`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long one case may run when no timeout is given: the spec's 120
/// seconds for live runs, which real providers need to boot machines and
/// cross the network. Offline runs (memory, local) get the same bound.
pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(120);

/// A check a runtime may skip by giving a reason under
/// [`SdkConformanceOptions::unsupported`]. A closed set: exactly the five
/// keys of the SDK specification, spelled as it spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Check {
    /// `gitPush`: skips the bare-repository clone, commit and push, for a
    /// runtime without git.
    #[serde(rename = "gitPush")]
    GitPush,
    /// `httpProbe`: skips the real HTTP request to a preview URL, for
    /// previews no HTTP client can reach.
    #[serde(rename = "httpProbe")]
    HttpProbe,
    /// `previews`: expects a preview URL to be refused with `unsupported`,
    /// and skips the HTTP probe too.
    #[serde(rename = "previews")]
    Previews,
    /// `processes`: skips the background process checks.
    #[serde(rename = "processes")]
    Processes,
    /// `fileModes`: skips the permission-bit check of `files.write`.
    #[serde(rename = "fileModes")]
    FileModes,
}

impl Check {
    /// Every check that may be skipped.
    pub const ALL: &'static [Check] = &[
        Check::GitPush,
        Check::HttpProbe,
        Check::Previews,
        Check::Processes,
        Check::FileModes,
    ];

    /// The spec's spelling: `gitPush`, `httpProbe`, `previews`,
    /// `processes`, `fileModes`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Check::GitPush => "gitPush",
            Check::HttpProbe => "httpProbe",
            Check::Previews => "previews",
            Check::Processes => "processes",
            Check::FileModes => "fileModes",
        }
    }

    /// The check spelled `name`, if any.
    pub fn parse(name: &str) -> Option<Check> {
        Check::ALL.iter().copied().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to run the SDK suite.
///
/// `live` must be `true` for every provider but `memory` and `local`: with
/// `live: false` the suite refuses any other provider, so that a test run
/// cannot reach real infrastructure by accident. Every check runs unless
/// its [`Check`] is in `unsupported`, with the reason the report prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SdkConformanceOptions {
    /// Whether the run may reach real infrastructure.
    pub live: bool,
    /// Checks the runtime cannot pass, each with the reason it cannot.
    pub unsupported: BTreeMap<Check, String>,
    /// How long each case may run; `None` is [`DEFAULT_CASE_TIMEOUT`].
    pub timeout: Option<Duration>,
}

impl SdkConformanceOptions {
    /// Options for an offline run (`live: false`), skipping nothing.
    pub fn offline() -> Self {
        Self::default()
    }

    /// Options for a live run (`live: true`), skipping nothing.
    pub fn live() -> Self {
        Self {
            live: true,
            ..Self::default()
        }
    }

    /// These options with `check` skipped for `reason`.
    pub fn skip(mut self, check: Check, reason: impl Into<String>) -> Self {
        self.unsupported.insert(check, reason.into());
        self
    }

    /// These options with each case bounded by `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The bound of one case.
    pub fn case_timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_CASE_TIMEOUT)
    }

    /// The reason `check` is skipped, if it is.
    pub fn reason(&self, check: Check) -> Option<&str> {
        self.unsupported.get(&check).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_spelled_as_the_spec_spells_them() {
        let names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            ["gitPush", "httpProbe", "previews", "processes", "fileModes"]
        );
        for check in Check::ALL {
            assert_eq!(Check::parse(check.as_str()), Some(*check));
            let json = serde_json::to_string(check).unwrap();
            assert_eq!(json, format!("\"{check}\""));
        }
        assert_eq!(Check::parse("git_push"), None);
    }

    // SDK spec, "Live runs give each case 120 seconds, since real
    // providers boot machines and cross the network. Pass `timeoutMs` to
    // change that." (Offline runs get the same bound.)
    #[test]
    fn live_runs_give_each_case_120_seconds_unless_a_timeout_is_passed() {
        let o = SdkConformanceOptions::offline();
        assert!(!o.live);
        assert_eq!(o.case_timeout(), Duration::from_secs(120));
        assert_eq!(
            SdkConformanceOptions::live().case_timeout(),
            Duration::from_secs(120)
        );
        let o = SdkConformanceOptions::live()
            .skip(Check::GitPush, "no git")
            .with_timeout(Duration::from_secs(5));
        assert!(o.live);
        assert_eq!(o.reason(Check::GitPush), Some("no git"));
        assert_eq!(o.reason(Check::HttpProbe), None);
        assert_eq!(o.case_timeout(), Duration::from_secs(5));
    }
}
