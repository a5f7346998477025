//! `corral gc`: reclaims what crashed corral processes left in the default
//! state directory — for the linux backend every piece of host state of
//! sandboxes that are not live (directories, mounts, cgroups, orphaned init
//! processes, key claims); for the local backend half-created sandboxes.
//! Live sandboxes are never touched.

use std::time::Duration;

use corral_backend_linux::LinuxBackend;
use corral_backend_linux::gc::GcReport;
use corral_backend_local::LocalBackend;
use serde::Serialize;

use crate::error::{CliError, CliResult};

/// How long a half-created local sandbox must have been untouched to be
/// reclaimed (the local backend records no creator, so age is its proof
/// that no create is still running).
pub const LOCAL_MIN_AGE: Duration = Duration::from_secs(60);

/// What the linux backend's sweep did, or why it was skipped.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum LinuxOutcome {
    /// The sweep ran.
    Swept(GcReport),
    /// The backend cannot run on this host; nothing of it was touched.
    Skipped(String),
}

/// The whole report, as printed with `--json`.
#[derive(Debug, Serialize)]
struct Report {
    linux: LinuxOutcome,
    local: LocalReport,
}

/// What the local backend's sweep reclaimed.
#[derive(Debug, Serialize)]
struct LocalReport {
    sandboxes: Vec<String>,
}

/// Runs `corral gc`: sweeps the linux and local backends of the default
/// state directory and prints what was reclaimed (JSON with `json`).
pub async fn gc(json: bool) -> CliResult {
    let dir = LocalBackend::default_state_dir();
    let linux = match LinuxBackend::available() {
        Ok(()) => LinuxOutcome::Swept(LinuxBackend::open(&dir)?.gc().await?),
        Err(why) => LinuxOutcome::Skipped(why),
    };
    let local = LocalReport {
        sandboxes: LocalBackend::open(&dir)?
            .sweep_incomplete(LOCAL_MIN_AGE)
            .await?,
    };
    let report = Report { linux, local };
    if json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", human(&report));
    }
    match &report.linux {
        LinuxOutcome::Swept(r) if !r.errors.is_empty() => Err(CliError::failure(
            "io",
            format!(
                "gc could not reclaim {} sandbox(es), first {}; run it again",
                r.errors.len(),
                r.errors[0]
            ),
        )),
        _ => Ok(0),
    }
}

/// The human summary: one line per backend.
fn human(report: &Report) -> String {
    let linux = match &report.linux {
        LinuxOutcome::Skipped(why) => format!("linux: skipped ({why})"),
        LinuxOutcome::Swept(r) => format!(
            "linux: reclaimed {} sandbox(es){}, killed {} init process(es), detached {} mount(s), \
             removed {} cgroup(s) and {} key claim(s); {} live sandbox(es) left alone",
            r.sandboxes.len(),
            ids(&r.sandboxes),
            r.processes_killed,
            r.mounts_detached,
            r.cgroups.len(),
            r.key_claims,
            r.spared.len()
        ),
    };
    format!(
        "{linux}\nlocal: reclaimed {} half-created sandbox(es){}\n",
        report.local.sandboxes.len(),
        ids(&report.local.sandboxes)
    )
}

/// ` (a, b)` for a non-empty list of ids.
fn ids(list: &[String]) -> String {
    if list.is_empty() {
        String::new()
    } else {
        format!(" ({})", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_what_was_reclaimed() {
        let report = Report {
            linux: LinuxOutcome::Swept(GcReport {
                sandboxes: vec!["lnx-0000000000000001".into()],
                spared: vec!["lnx-0000000000000002".into()],
                processes_killed: 1,
                ..GcReport::default()
            }),
            local: LocalReport {
                sandboxes: Vec::new(),
            },
        };
        let text = human(&report);
        assert!(
            text.starts_with("linux: reclaimed 1 sandbox(es) (lnx-0000000000000001), killed 1"),
            "{text}"
        );
        assert!(text.contains("1 live sandbox(es) left alone"), "{text}");
        assert!(
            text.ends_with("local: reclaimed 0 half-created sandbox(es)\n"),
            "{text}"
        );
        let skipped = Report {
            linux: LinuxOutcome::Skipped("no root".into()),
            local: LocalReport {
                sandboxes: vec!["loc-1".into()],
            },
        };
        assert_eq!(
            human(&skipped),
            "linux: skipped (no root)\nlocal: reclaimed 1 half-created sandbox(es) (loc-1)\n"
        );
    }
}
