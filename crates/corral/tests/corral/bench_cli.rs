//! `corral bench --only "corral run"`: the whole command line's path,
//! `corral run -- /bin/true` with this very binary, measured beside the
//! start group's floor in the same run, on a state directory of its own
//! that is gone afterwards. No time is asserted: only that the row was
//! measured (or skipped with its reason) and left nothing behind.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_whole_cli_path_is_a_row_beside_the_floor_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "bench",
            "--only",
            "corral run",
            "--iterations",
            "2",
            "--json",
            "-",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run corral bench");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rows = report["rows"].as_array().expect("rows");
    let floor = rows.iter().find(|r| r["role"] == "floor").expect("a floor");
    assert_eq!(floor["outcome"], "measured", "{floor}");
    let cli = rows
        .iter()
        .find(|r| {
            r["name"]
                .as_str()
                .unwrap()
                .starts_with("corral run -- /bin/true")
        })
        .unwrap_or_else(|| panic!("no corral run row: {report}"));
    match cli["outcome"].as_str().unwrap() {
        "measured" => {
            assert!(cli["ratio_to_floor"].as_f64().unwrap() > 0.0, "{cli}");
            assert_eq!(out.status.code(), Some(0), "{report}");
        }
        "skipped" => println!("SKIP the corral run row: {}", cli["note"]),
        other => panic!("the corral run row {other}: {cli}"),
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(
        left.is_empty(),
        "the row's state directory was left: {left:?}"
    );
}
