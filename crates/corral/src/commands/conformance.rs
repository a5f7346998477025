//! `corral conformance`: run a conformance suite against a target and print
//! the evidence — one line per case, passed, failed or skipped with its
//! reason, ending with `N passed, N failed, N skipped`.
//!
//! Targets: `memory` (the deterministic oracle), `minimal` (the contract's
//! minimum provider, made from the oracle), `local` (the local backend, in
//! a temporary state directory removed afterwards — never the user's own),
//! `linux` (the linux backend, likewise; unavailable where the host cannot
//! make linux sandboxes).
//! `--json PATH` also writes the report as JSON (`-` writes it to stdout and
//! the table to stderr). The exit status is 0 only when no case failed.

use std::io::Write;
use std::path::{Path, PathBuf};

use corral_conformance::Suite;
use corral_conformance::targets::{self, TargetError};

use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// Runs `corral conformance`.
pub async fn conformance(
    backend: Option<String>,
    suite: Option<String>,
    json: Option<PathBuf>,
) -> CliResult {
    let suite = parse_suite(suite.as_deref())?;
    let Some(name) = backend.as_deref() else {
        return Err(CliError::usage(format!(
            "name the target with --backend ({})",
            targets::NAMES.join(", ")
        )));
    };
    let target = targets::by_name(name).map_err(|e| match e {
        TargetError::Unknown { .. } => CliError::usage(e.to_string()),
        TargetError::Local(_) | TargetError::Linux(_) | TargetError::Docker(_) => {
            CliError::failure("unavailable", e.to_string())
        }
    })?;
    let report = target
        .run(suite)
        .await
        .map_err(|e| CliError::failure("provider", format!("target {name}: {e}")))?;
    let table = report.table();
    let to_stdout = json.as_deref() == Some(Path::new("-"));
    if to_stdout {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(path) = &json {
        let text = report
            .to_json()
            .map_err(|e| CliError::failure("io", format!("encoding the report as JSON: {e}")))?;
        if to_stdout {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")
                .map_err(|e| CliError::failure("io", format!("writing the report: {e}")))?;
        } else {
            std::fs::write(path, format!("{text}\n"))
                .map_err(|e| CliError::failure("io", format!("writing {}: {e}", path.display())))?;
        }
    }
    Ok(if report.succeeded() { 0 } else { EXIT_FAILURE })
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
        let e = parse_suite(Some("sdk-v9")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "corral: error: [usage] unknown suite \"sdk-v9\"; known suites: contract"
        );
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
    }

    #[tokio::test]
    async fn an_unknown_backend_is_a_one_line_usage_error() {
        let e = conformance(Some("vmware".into()), None, None)
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
        let code = conformance(Some("minimal".into()), None, Some(path.clone()))
            .await
            .unwrap();
        assert_eq!(code, 0);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["target"], "minimal");
        assert_eq!(json["cases"].as_array().map(Vec::len), Some(9));
    }
}
