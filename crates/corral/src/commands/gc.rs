//! `corral gc`: reclaims what crashed corral processes left in the default
//! state directory — for the linux backend every piece of host state of
//! sandboxes that are not live (directories, mounts, cgroups, orphaned init
//! processes, key claims); for the local backend half-created sandboxes.
//! Live sandboxes are never touched.
//!
//! On linux, local and (where it answers) docker it then destroys the
//! sandboxes whose `corral.creator` label names a process that is gone
//! ([`super::creator`]): a `corral run` or `corral mcp` killed with
//! `kill -9` leaves nothing a plain `corral gc` does not reclaim.
//!
//! With `--idle DURATION` it then also destroys the sandboxes carrying the
//! `corral` label (any value) idle for at least that long
//! ([`corral_sdk::gc`]: idleness from the newest of creation and the last
//! run's start or end; a sandbox with a run in progress is always spared),
//! on `--backend NAME`, or on local and, where it can run, linux.

use std::sync::Arc;
use std::time::Duration;

use corral_backend::{Backend, ErrorCode, ReclaimDetail, ReclaimReport};
use corral_registry::{BackendKind, OpenError};
use serde::Serialize;

use crate::args::GcArgs;
use crate::error::{CliError, CliResult};

/// How a backend that did not open is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenFailure {
    /// gc fails with the backend's error.
    Fails,
    /// gc reports the backend skipped and goes on; an error other than
    /// `unavailable` is also a failure of its creator sweep.
    Skips,
}

/// What gc does with a backend's sandboxes once its own sweep has run.
#[derive(Debug, Clone, Copy)]
struct Role {
    /// Where its creator and idle sweeps are reported, first to last.
    order: u8,
    /// Whether `--idle` without `--backend` sweeps it.
    idle_unnamed: bool,
    /// What a failure to open it does.
    open_failure: OpenFailure,
}

/// How gc takes `kind`'s sandboxes (where it is open here): local, linux
/// and docker in their creator sweep in that order, local and linux alone
/// idle unless a backend is named, docker skipped wherever its engine does
/// not answer; nothing of memory's, whose sandboxes die with the process
/// that made them.
const fn role(kind: BackendKind) -> Option<Role> {
    match kind {
        BackendKind::Local => Some(Role {
            order: 0,
            idle_unnamed: true,
            open_failure: OpenFailure::Fails,
        }),
        BackendKind::Linux => Some(Role {
            order: 1,
            idle_unnamed: true,
            open_failure: OpenFailure::Fails,
        }),
        BackendKind::Docker => Some(Role {
            order: 2,
            idle_unnamed: false,
            open_failure: OpenFailure::Skips,
        }),
        BackendKind::Memory => None,
    }
}

/// What a host-state reclaim pass did ([`ReclaimDetail::HostState`]), as
/// the linux line of the report prints it.
#[derive(Debug, Default, Serialize)]
struct HostSweep {
    sandboxes: Vec<String>,
    spared: Vec<String>,
    processes_killed: usize,
    mounts_detached: usize,
    cgroups: Vec<String>,
    key_claims: usize,
    tables: Vec<String>,
    snapshot_temporaries: usize,
    errors: Vec<String>,
}

impl From<ReclaimReport> for HostSweep {
    fn from(r: ReclaimReport) -> Self {
        let host = match r.detail {
            ReclaimDetail::HostState(host) => host,
            ReclaimDetail::HalfCreated => Default::default(),
        };
        HostSweep {
            sandboxes: r.sandboxes,
            spared: host.spared,
            processes_killed: host.processes_killed,
            mounts_detached: host.mounts_detached,
            cgroups: host.cgroups,
            key_claims: host.key_claims,
            tables: host.tables,
            snapshot_temporaries: host.snapshot_temporaries,
            errors: r.errors,
        }
    }
}

/// What the linux backend's sweep did, or why it was skipped.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum LinuxOutcome {
    /// The sweep ran.
    Swept(HostSweep),
    /// The backend cannot run on this host; nothing of it was touched.
    Skipped(String),
}

/// The whole report, as printed with `--json`.
#[derive(Debug, Serialize)]
struct Report {
    linux: LinuxOutcome,
    local: LocalReport,
    docker: DockerOutcome,
    /// The sandboxes whose creator is gone, one report per backend swept.
    creators: Vec<super::creator::CreatorSweep>,
    /// The idle sweep, one report per backend, with `--idle`.
    #[serde(skip_serializing_if = "Option::is_none")]
    idle: Option<Vec<corral_sdk::GcReport>>,
}

/// Whether the Docker Engine's sandboxes were swept, or why not.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum DockerOutcome {
    /// The engine answered; its sandboxes are in the creator sweep.
    Swept,
    /// No engine answers here, or connecting failed (the reason says which).
    Skipped(String),
}

/// What the local backend's sweep reclaimed.
#[derive(Debug, Serialize)]
struct LocalReport {
    sandboxes: Vec<String>,
}

/// One backend gc takes: opened with what its reclaim member did, or
/// skipped with the reason.
enum Taken {
    /// Open (and verified); `reclaimed` is `None` where it declares no
    /// reclaim member.
    Open {
        backend: Arc<dyn Backend>,
        reclaimed: Option<ReclaimReport>,
    },
    /// Not open here, for this reason.
    Skipped(String),
}

/// Opens `kind` on the default state directory and runs its reclaim
/// member where it declares one; an open failure is taken as `role` says
/// (a creator sweep failure goes to `creators`).
async fn take(
    kind: BackendKind,
    role: Role,
    creators: &mut Vec<super::creator::CreatorSweep>,
) -> Result<Taken, CliError> {
    let opened = match kind.open_to_sweep().await {
        Ok(opened) => opened,
        Err(OpenError::Unavailable { why, .. }) => return Ok(Taken::Skipped(why)),
        Err(OpenError::Backend(e)) if role.open_failure == OpenFailure::Skips => {
            if e.code() != ErrorCode::Unavailable {
                creators.push(super::creator::CreatorSweep {
                    backend: kind.name().to_string(),
                    failed: vec![e.message().clone()],
                    ..Default::default()
                });
            }
            return Ok(Taken::Skipped(e.message()));
        }
        Err(OpenError::Backend(e)) => return Err(CliError::from(e)),
        Err(e) => return Err(CliError::failure("io", e.to_string())),
    };
    // The registry verified it when it opened it.
    let backend = opened.into_dyn();
    let reclaimed = match backend.reclaim_ops() {
        Some(member) => Some(member.reclaim().await?),
        None => None,
    };
    Ok(Taken::Open { backend, reclaimed })
}

/// Runs `corral gc`: runs the reclaim member of every backend on the
/// default state directory that declares one (linux, local), then the
/// creator sweep, then with `--idle` destroys idle sandboxes, and prints
/// what was reclaimed (JSON with `--json`).
pub async fn gc(args: GcArgs) -> CliResult {
    let idle = args.idle.as_deref().map(parse_duration).transpose()?;
    let mut creators = Vec::new();
    let mut linux = LinuxOutcome::Skipped(String::new());
    let mut local = LocalReport {
        sandboxes: Vec::new(),
    };
    let mut docker = DockerOutcome::Swept;
    let mut errors: Vec<String> = Vec::new();
    let mut swept: Vec<(Role, Arc<dyn Backend>)> = Vec::new();
    for kind in BackendKind::ALL {
        let Some(role) = role(kind) else { continue };
        let (reclaimed, skipped) = match take(kind, role, &mut creators).await? {
            Taken::Open { backend, reclaimed } => {
                swept.push((role, backend));
                (reclaimed, None)
            }
            Taken::Skipped(why) => (None, Some(why)),
        };
        if let Some(r) = &reclaimed {
            errors.extend(r.errors.iter().cloned());
        }
        match kind {
            BackendKind::Linux => {
                linux = match (reclaimed, skipped) {
                    (_, Some(why)) => LinuxOutcome::Skipped(why),
                    (reclaimed, None) => LinuxOutcome::Swept(reclaimed.unwrap_or_default().into()),
                };
            }
            BackendKind::Local => {
                local.sandboxes = reclaimed.map(|r| r.sandboxes).unwrap_or_default();
            }
            BackendKind::Docker => {
                if let Some(why) = skipped {
                    docker = DockerOutcome::Skipped(why);
                }
            }
            BackendKind::Memory => {}
        }
    }
    swept.sort_by_key(|(role, _)| role.order);
    for (_, backend) in &swept {
        creators.push(super::creator::sweep(backend).await);
    }
    let idle = match idle {
        None => None,
        Some(idle) => {
            let backends: Vec<Arc<dyn Backend>> = match args.backend.as_deref() {
                Some(named) => vec![crate::backends::open(Some(named)).await?],
                // Those just swept, on the default state directory, that
                // --idle sweeps unnamed.
                None => swept
                    .into_iter()
                    .filter(|(role, _)| role.idle_unnamed)
                    .map(|(_, backend)| backend)
                    .collect(),
            };
            let mut reports = Vec::new();
            for backend in backends {
                let report = corral_sdk::gc(backend, idle)
                    .await
                    .map_err(|e| CliError::failure(e.code.as_str(), e.to_string()))?;
                reports.push(report);
            }
            Some(reports)
        }
    };
    let report = Report {
        linux,
        local,
        docker,
        creators,
        idle,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::failure("io", format!("encoding JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", human(&report));
    }
    if let Some(first) = errors.first() {
        return Err(CliError::failure(
            "io",
            format!(
                "gc could not reclaim {} sandbox(es), first {first}; run it again",
                errors.len(),
            ),
        ));
    }
    if let Some(failure) = report.creators.iter().flat_map(|c| c.failed.iter()).next() {
        return Err(CliError::failure(
            "io",
            format!(
                "gc could not reclaim a sandbox whose creator is gone: {failure}; run it again"
            ),
        ));
    }
    if let Some(failure) = report
        .idle
        .iter()
        .flatten()
        .flat_map(|r| r.failed.iter())
        .next()
    {
        return Err(CliError::failure(
            "io",
            format!(
                "gc --idle could not inspect or destroy {}: {}; run it again",
                failure.id, failure.error
            ),
        ));
    }
    Ok(0)
}

/// Parses `90s`, `30m`, `2h`, `1d`, `500ms`, `1h30m`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, CliError> {
    let bad = || {
        CliError::usage(format!(
            "--idle: {text:?} is not a duration (e.g. 90s, 30m, 2h, 1d, 1h30m)"
        ))
    };
    let text_trimmed = text.trim();
    if text_trimmed.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = text_trimmed.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text_trimmed;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        let ms = n.checked_mul(unit_ms).ok_or_else(bad)?;
        total = total
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(bad)?;
    }
    Ok(total)
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
    let mut text = format!(
        "{linux}\nlocal: reclaimed {} half-created sandbox(es){}\n",
        report.local.sandboxes.len(),
        ids(&report.local.sandboxes)
    );
    if let DockerOutcome::Skipped(why) = &report.docker {
        text.push_str(&format!("docker: skipped ({why})\n"));
    }
    for c in report.creators.iter().filter(|c| !c.removed.is_empty()) {
        text.push_str(&format!(
            "{}: reclaimed {} sandbox(es) whose creator is gone{}\n",
            c.backend,
            c.removed.len(),
            ids(&c.removed)
        ));
    }
    for r in report.idle.iter().flatten() {
        text.push_str(&idle_line(r));
    }
    text
}

/// One line per backend of the idle sweep.
fn idle_line(r: &corral_sdk::GcReport) -> String {
    let busy: Vec<String> = r
        .spared
        .iter()
        .filter(|s| matches!(s.reason, corral_sdk::SpareReason::RunInProgress { .. }))
        .map(|s| s.id.clone())
        .collect();
    let recent = r.spared.len() - busy.len();
    let failed: Vec<String> = r.failed.iter().map(|f| f.id.clone()).collect();
    let mut line = format!(
        "idle {}: removed {} sandbox(es){}; spared {} with a run in progress{} and {} recently active",
        r.backend,
        r.removed.len(),
        ids(&r.removed),
        busy.len(),
        ids(&busy),
        recent
    );
    if !failed.is_empty() {
        line.push_str(&format!("; {} failed{}", failed.len(), ids(&failed)));
    }
    line.push('\n');
    line
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
            linux: LinuxOutcome::Swept(HostSweep {
                sandboxes: vec!["lnx-0000000000000001".into()],
                spared: vec!["lnx-0000000000000002".into()],
                processes_killed: 1,
                ..HostSweep::default()
            }),
            local: LocalReport {
                sandboxes: Vec::new(),
            },
            docker: DockerOutcome::Swept,
            creators: Vec::new(),
            idle: None,
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
            docker: DockerOutcome::Swept,
            creators: Vec::new(),
            idle: None,
        };
        assert_eq!(
            human(&skipped),
            "linux: skipped (no root)\nlocal: reclaimed 1 half-created sandbox(es) (loc-1)\n"
        );
        let no_engine = Report {
            docker: DockerOutcome::Skipped("no Docker Engine socket at /x".into()),
            ..skipped
        };
        assert!(
            human(&no_engine).ends_with("docker: skipped (no Docker Engine socket at /x)\n"),
            "{}",
            human(&no_engine)
        );
    }

    #[test]
    fn durations_parse_or_are_refused() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        for bad in ["", "m", "30x", "-5m", "1.5h", "30m ago"] {
            let e = parse_duration(bad).unwrap_err().to_string();
            assert!(e.contains("is not a duration"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_idle_summary_names_removed_and_busy() {
        let r = corral_sdk::GcReport {
            backend: "local".into(),
            removed: vec!["loc-a".into()],
            spared: vec![
                corral_sdk::Spared {
                    id: "loc-b".into(),
                    reason: corral_sdk::SpareReason::RunInProgress { runs: 1 },
                },
                corral_sdk::Spared {
                    id: "loc-c".into(),
                    reason: corral_sdk::SpareReason::RecentlyActive { idle_ms: 5 },
                },
            ],
            failed: Vec::new(),
        };
        assert_eq!(
            idle_line(&r),
            "idle local: removed 1 sandbox(es) (loc-a); spared 1 with a run in progress (loc-b) and 1 recently active\n"
        );
    }
}
