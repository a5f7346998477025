//! `corral conformance`: run a conformance suite against a target and print
//! the evidence — one line per case, passed, failed or skipped with its
//! reason, ending with `N passed, N failed, N skipped`.
//!
//! Suites: `contract` (the provider contract's nine cases, the default) and
//! `sdk` (the SDK conformance suite, through the SDK). Targets: `memory`
//! (the deterministic oracle), `minimal` (the contract's minimum provider,
//! made from the oracle; contract suite only: it narrows a contract
//! provider and has no backend for the SDK to run on), `local` (the local
//! backend, in a temporary state directory removed afterwards — never the
//! user's own), `linux` (the linux backend, likewise; unavailable where the
//! host cannot make linux sandboxes), `docker` (the Docker Engine of
//! `DOCKER_HOST`; unavailable where none answers). The SDK suite runs
//! memory and local offline and linux and docker live, with the checks each
//! target declares it cannot pass skipped and their reasons printed.
//! `--json PATH` also writes the report as JSON (`-` writes it to stdout and
//! the table to stderr). The exit status is 0 only when no case failed.

use std::io::Write;
use std::path::{Path, PathBuf};

use corral_conformance::sdk::run_sdk_target_observed;
use corral_conformance::targets::{self, BuiltinTarget, Relayed, TargetError};
use corral_conformance::{EgressFixture, Observer, Report, Suite, SuiteCase, Target};
use corral_registry::ConformanceTarget;

use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// What any suite's report gives the command once its lines were printed
/// as they settled: its closing line, its JSON, and whether nothing failed.
struct Evidence {
    summary: String,
    json: serde_json::Result<String>,
    succeeded: bool,
}

impl Evidence {
    /// A suite's report as the command shows it.
    fn of<C: SuiteCase>(report: &Report<C>) -> Self {
        Self {
            summary: report.summary(),
            json: report.to_json(),
            succeeded: report.succeeded(),
        }
    }
}

/// Prints a run's table as it goes — the heading when the run begins, each
/// case's line the moment it settles — to stdout, or to stderr when the
/// JSON report goes to stdout (`--json -`). Shared by every form of
/// `corral conformance`; [`emit`] prints the closing line.
pub(crate) struct LiveTable {
    to_stderr: bool,
}

impl LiveTable {
    /// The printer for a run whose `--json` is `json`.
    pub(crate) fn for_json(json: Option<&Path>) -> Self {
        LiveTable {
            to_stderr: json == Some(Path::new("-")),
        }
    }

    fn line(&self, line: &str) {
        if self.to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
            let _ = std::io::stdout().flush();
        }
    }
}

impl<C: SuiteCase> Observer<C> for LiveTable {
    fn began(&mut self, heading: &str) {
        self.line(heading);
    }

    fn settled(&mut self, line: &str) {
        self.line(line);
    }
}

/// Runs `corral conformance`.
pub async fn conformance(
    backend: Option<String>,
    suite: Option<String>,
    json: Option<PathBuf>,
    egress: Option<EgressFixture>,
) -> CliResult {
    let suite = parse_suite(suite.as_deref())?;
    let Some(name) = backend.as_deref() else {
        return Err(CliError::usage(format!(
            "name the target with --backend ({})",
            ConformanceTarget::names()
        )));
    };
    let mut live = LiveTable::for_json(json.as_deref());
    let evidence = match name.strip_prefix(crate::backends::REMOTE_PREFIX) {
        Some(endpoint) if egress.is_none() => remote_sdk(endpoint, suite, &mut live).await?,
        Some(_) => return Err(egress_elsewhere(name)),
        None => builtin(name, suite, egress, &mut live).await?,
    };
    emit(&evidence.summary, json.as_deref(), || {
        evidence
            .json
            .map_err(|e| CliError::failure("io", format!("encoding the report as JSON: {e}")))
    })?;
    Ok(if evidence.succeeded { 0 } else { EXIT_FAILURE })
}

/// The SDK suite on a remote backend, held to what the backend it serves
/// declares (the contract suite over the wire is `--provider`).
async fn remote_sdk(
    endpoint: &str,
    suite: Suite,
    live: &mut LiveTable,
) -> Result<Evidence, CliError> {
    if suite != Suite::Sdk {
        return Err(CliError::usage(format!(
            "a remote backend runs the SDK suite (--suite sdk); the contract suite over the wire \
             runs with --provider {endpoint}"
        )));
    }
    let remote = crate::backends::open_remote(endpoint).await?;
    let served = remote.served().to_owned();
    let target = Relayed::new(std::sync::Arc::new(remote), served);
    let report = run_sdk_target_observed(&target, live)
        .await
        .map_err(|e| CliError::usage(format!("target {}: {e}", target.name())))?;
    Ok(Evidence::of(&report))
}

/// `--egress-allowed`/`--egress-denied` given for a target whose egress
/// cases do not probe what a caller names.
fn egress_elsewhere(name: &str) -> CliError {
    CliError::usage(format!(
        "--egress-allowed and --egress-denied name the allowlist case's destinations for \
         --backend linux and --provider; the {name} target probes no destination a caller names"
    ))
}

/// `suite` on the built-in target called `name`, its allowlist case probing
/// `egress` where given (linux only).
async fn builtin(
    name: &str,
    suite: Suite,
    egress: Option<EgressFixture>,
    live: &mut LiveTable,
) -> Result<Evidence, CliError> {
    let named = targets::parse(name).map_err(|e| CliError::usage(e.to_string()))?;
    if suite == Suite::Sdk && named == ConformanceTarget::Minimal {
        return Err(CliError::usage(
            "the minimal target narrows a contract provider and has no backend for the SDK \
             suite; run --suite sdk with memory, local or linux",
        ));
    }
    if egress.is_some() && named != ConformanceTarget::Linux {
        return Err(egress_elsewhere(name));
    }
    let mut target = BuiltinTarget::open(named).map_err(|e| match e {
        TargetError::Unknown { .. } => CliError::usage(e.to_string()),
        TargetError::Local(_) | TargetError::Linux(_) | TargetError::Docker(_) => {
            CliError::failure("unavailable", e.to_string())
        }
    })?;
    if let (BuiltinTarget::Linux(linux), Some(fixture)) = (&mut target, egress) {
        linux.give_allowlist_egress(fixture);
    }
    run(&target, suite, name, live).await
}

/// Prints a run's closing line (its table's last, after [`LiveTable`]
/// printed the others) and, with `--json PATH`, writes the `json` text
/// there: to stdout when PATH is `-`, the table then going to stderr.
/// Shared by every form of `corral conformance`.
pub(crate) fn emit(
    summary: &str,
    json: Option<&Path>,
    text: impl FnOnce() -> Result<String, CliError>,
) -> Result<(), CliError> {
    let to_stdout = json == Some(Path::new("-"));
    if to_stdout {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    let Some(path) = json else {
        return Ok(());
    };
    let text = text()?;
    if to_stdout {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .map_err(|e| CliError::failure("io", format!("writing the report: {e}")))
    } else {
        std::fs::write(path, format!("{text}\n"))
            .map_err(|e| CliError::failure("io", format!("writing {}: {e}", path.display())))
    }
}

/// Runs `suite` against `target` (called `name`), printing each line as it
/// settles.
async fn run(
    target: &BuiltinTarget,
    suite: Suite,
    name: &str,
    live: &mut LiveTable,
) -> Result<Evidence, CliError> {
    match suite {
        Suite::Contract => {
            let report = target
                .run_observed(live)
                .await
                .map_err(|e| CliError::failure("provider", format!("target {name}: {e}")))?;
            Ok(Evidence::of(&report))
        }
        Suite::Sdk => {
            let report = target
                .run_sdk_observed(live)
                .await
                .ok_or_else(|| {
                    CliError::usage(format!("the {name} target cannot run the SDK suite"))
                })?
                .map_err(|e| CliError::usage(format!("target {name}: {e}")))?;
            Ok(Evidence::of(&report))
        }
    }
}

/// The suite called `name` (`contract` when `None`).
fn parse_suite(name: Option<&str>) -> Result<Suite, CliError> {
    let name = name.unwrap_or(Suite::Contract.as_str());
    Suite::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Suite::ALL.iter().map(|s| s.as_str()).collect();
        CliError::usage(format!(
            "unknown suite {name:?}; known suites: {}",
            known.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_default_to_the_contract_and_unknown_ones_are_usage_errors() {
        assert_eq!(parse_suite(None).unwrap(), Suite::Contract);
        assert_eq!(parse_suite(Some("contract")).unwrap(), Suite::Contract);
        assert_eq!(parse_suite(Some("sdk")).unwrap(), Suite::Sdk);
        let e = parse_suite(Some("sdk-v9")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "corral: error: [usage] unknown suite \"sdk-v9\"; known suites: contract, sdk"
        );
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
    }

    #[tokio::test]
    async fn an_unknown_backend_is_a_one_line_usage_error() {
        let e = conformance(Some("vmware".into()), None, None, None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "corral: error: [usage] unknown backend \"vmware\"; known backends: memory, minimal, local, linux, docker"
        );
    }

    #[tokio::test]
    async fn the_minimum_provider_exits_zero_and_writes_its_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let code = conformance(Some("minimal".into()), None, Some(path.clone()), None)
            .await
            .unwrap();
        assert_eq!(code, 0);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["target"], "minimal");
        assert_eq!(json["cases"].as_array().map(Vec::len), Some(9));
    }

    #[tokio::test]
    async fn the_sdk_suite_on_memory_exits_zero_with_one_entry_per_case() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sdk.json");
        let code = conformance(
            Some("memory".into()),
            Some("sdk".into()),
            Some(path.clone()),
            None,
        )
        .await
        .unwrap();
        assert_eq!(code, 0);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["target"], "memory");
        assert_eq!(json["live"], false);
        let cases = json["cases"].as_array().unwrap();
        assert_eq!(cases.len(), corral_conformance::sdk::SdkCase::ALL.len());
        let skipped: Vec<&str> = cases
            .iter()
            .filter(|c| c["outcome"] == "skipped")
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(skipped, ["git-push", "http-probe"]);
    }

    #[tokio::test]
    async fn the_sdk_suite_refuses_the_minimal_target_in_one_line() {
        let e = conformance(Some("minimal".into()), Some("sdk".into()), None, None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "corral: error: [usage] the minimal target narrows a contract provider and has no \
             backend for the SDK suite; run --suite sdk with memory, local or linux"
        );
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
    }
}
