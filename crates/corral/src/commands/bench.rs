//! `corral bench`: sandbox start, exec and read costs measured side by side
//! with fork+exec, `unshare`, `bwrap` and docker, and the cost of the wire
//! (a unary call and `openProcess` stdout over loopback beside the same
//! calls in process), printed as a table of medians (p10, p90) and ratios
//! to each group's floor.
//!
//! `--iterations N` sets the timed iterations of every row (the idle
//! footprint keeps its 200 sandboxes, the density row its `--density N`,
//! default 100; `--concurrent-execs M`, default 100, is how many execs the
//! concurrent row starts at once); `--only NAME` (repeatable) keeps the
//! rows whose name starts with NAME or whose group is NAME, plus the floor
//! they are compared with. `--json PATH` also writes the report with the
//! host's facts as JSON (`-` writes it to stdout and the table to stderr).
//! The docker rows use `$CORRAL_BENCH_DOCKER_IMAGE` when set, else an image
//! already present; nothing is ever pulled. The `e2b` row serves with this
//! very binary and drives it with E2B's Python SDK from
//! `$CORRAL_BENCH_E2B_PYTHON` (else `python3`). Rows that cannot run here are
//! skipped with their reason; the exit status is 1 when a row failed.

use std::io::Write;
use std::path::{Path, PathBuf};

use corral_bench::{BenchConfig, BenchError, Outcome};

use crate::args::BenchArgs;
use crate::error::{CliError, CliResult, EXIT_FAILURE};

/// The variable naming the image of the docker rows.
const DOCKER_IMAGE_VAR: &str = "CORRAL_BENCH_DOCKER_IMAGE";

/// Runs `corral bench`.
pub async fn bench(args: BenchArgs) -> CliResult {
    let BenchArgs {
        json,
        iterations,
        only,
        density,
        concurrent_execs,
    } = args;
    for (flag, value) in [
        ("--iterations", iterations),
        ("--density", density),
        ("--concurrent-execs", concurrent_execs),
    ] {
        if value == Some(0) {
            return Err(CliError::usage(format!("{flag} must be at least 1")));
        }
    }
    let config = BenchConfig {
        iterations,
        only,
        density,
        concurrent_execs,
        docker_image: std::env::var(DOCKER_IMAGE_VAR)
            .ok()
            .filter(|s| !s.trim().is_empty()),
        corral_bin: std::env::current_exe().ok(),
        e2b_python: std::env::var_os(corral_bench::E2B_PYTHON_VAR)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
    };
    let report = corral_bench::run(&config).await.map_err(cli_error)?;
    let table = report.table();
    let to_stdout = json.as_deref() == Some(Path::new("-"));
    if to_stdout {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    if let Some(path) = &json {
        let text = report.to_json().map_err(cli_error)?;
        if to_stdout {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")
                .map_err(|e| CliError::failure("io", format!("writing the report: {e}")))?;
        } else {
            std::fs::write(path, format!("{text}\n"))
                .map_err(|e| CliError::failure("io", format!("writing {}: {e}", path.display())))?;
        }
    }
    let failed = report.rows.iter().any(|r| r.outcome == Outcome::Failed);
    Ok(if failed { EXIT_FAILURE } else { 0 })
}

/// A bench error as a CLI error: an unknown filter is a usage error.
fn cli_error(e: BenchError) -> CliError {
    match e {
        BenchError::UnknownFilter { .. } => CliError::usage(e.to_string()),
        BenchError::Json(_) => CliError::failure("io", e.to_string()),
        _ => CliError::failure("provider", e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: Option<PathBuf>, iterations: Option<u32>, only: Vec<String>) -> BenchArgs {
        BenchArgs {
            json,
            iterations,
            only,
            density: None,
            concurrent_execs: None,
        }
    }

    #[tokio::test]
    async fn zero_counts_and_unknown_rows_are_usage_errors() {
        let e = bench(args(None, Some(0), vec![])).await.unwrap_err();
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "corral: error: [usage] --iterations must be at least 1"
        );
        for flag in ["--density", "--concurrent-execs"] {
            let mut zero = args(None, None, vec![]);
            match flag {
                "--density" => zero.density = Some(0),
                _ => zero.concurrent_execs = Some(0),
            }
            let e = bench(zero).await.unwrap_err();
            assert_eq!(e.exit, crate::error::EXIT_USAGE);
            assert_eq!(
                e.to_string(),
                format!("corral: error: [usage] {flag} must be at least 1")
            );
        }
        let e = bench(args(None, Some(1), vec!["nosuchrow".into()]))
            .await
            .unwrap_err();
        assert_eq!(e.exit, crate::error::EXIT_USAGE);
        assert!(
            e.to_string().contains("no measure matches \"nosuchrow\""),
            "{e}"
        );
    }

    #[tokio::test]
    async fn memory_rows_write_their_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        let code = bench(args(Some(path.clone()), Some(3), vec!["memory".into()]))
            .await
            .unwrap();
        assert_eq!(code, 0);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["rows"].as_array().map(Vec::len), Some(3));
        assert_eq!(json["rows"][2]["name"], "memory exec");
        assert!(json["host"]["kernel"].is_string());
    }
}
