//! `corral bench --only e2b` through the binary: the SDK row serves with
//! this binary and drives it with E2B's Python SDK, beside the backend's
//! cycle in process. Without a Python that has `e2b` the row is a skip
//! naming the variable; with one (`CORRAL_BENCH_E2B_PYTHON`, which
//! `scripts/test` points at the newest pinned SDK's environment) it is
//! measured, and its ratio is to the in-process floor. Either way nothing
//! is left behind: the server's shutdown destroyed what it made.

use std::process::Command;

use serde_json::Value;

/// `corral bench --only ONLY --iterations 2 --json -` with `env` set: the
/// report and the exit status.
pub(crate) fn bench_only(only: &str, env: &[(&str, &std::ffi::OsStr)]) -> (Value, Option<i32>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.args(["bench", "--only", only, "--iterations", "2", "--json", "-"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("run corral bench");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code())
}

/// The e2b rows with the SDK's interpreter `python`.
fn bench(python: &str) -> (Value, Option<i32>) {
    bench_only("e2b", &[("CORRAL_BENCH_E2B_PYTHON", python.as_ref())])
}

/// The e2b group's two rows: (floor, SDK row).
fn rows(report: &Value) -> (&Value, &Value) {
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{report}");
    assert!(rows.iter().all(|r| r["group"] == "e2b"), "{report}");
    (&rows[0], &rows[1])
}

#[test]
fn without_the_sdk_the_e2b_row_is_a_skip_naming_the_variable() {
    // An interpreter that runs and exits at once: it never says it imported e2b.
    let (report, status) = bench("/bin/true");
    let (floor, sdk) = rows(&report);
    assert_eq!(floor["role"], "floor", "{floor}");
    assert_eq!(floor["outcome"], "measured", "{floor}");
    assert!(
        floor["name"].as_str().unwrap().starts_with("in-process "),
        "{floor}"
    );
    assert_eq!(sdk["outcome"], "skipped", "{sdk}");
    let note = sdk["note"].as_str().unwrap();
    assert!(
        note.contains("/bin/true cannot import the e2b package")
            && note.contains("CORRAL_BENCH_E2B_PYTHON"),
        "{note}"
    );
    assert_eq!(status, Some(0), "a skip is not a failure");
}

#[test]
fn with_the_sdk_the_cycle_is_measured_beside_the_in_process_floor() {
    let Some(python) = std::env::var("CORRAL_BENCH_E2B_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("SKIP: CORRAL_BENCH_E2B_PYTHON names no Python with the e2b package");
        return;
    };
    let (report, status) = bench(&python);
    let (floor, sdk) = rows(&report);
    assert_eq!(sdk["outcome"], "measured", "{sdk}");
    assert_eq!(status, Some(0), "{report}");
    assert!(
        sdk["note"]
            .as_str()
            .unwrap()
            .contains("→ corral serve on 127.0.0.1"),
        "{sdk}"
    );
    let ratio = sdk["ratio_to_floor"].as_f64().unwrap();
    let expected = sdk["median_us"].as_f64().unwrap() / floor["median_us"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-6 * expected, "{report}");
}
