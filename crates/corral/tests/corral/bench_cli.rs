//! `corral bench --only "corral run"`: the whole command line's path,
//! `corral run -- /bin/true` with this very binary, measured beside the
//! start group's floor in the same run, on a state directory of its own
//! that is gone afterwards. No time is asserted: only that the row was
//! measured (or skipped with its reason) and left nothing behind.

#[test]
fn the_whole_cli_path_is_a_row_beside_the_floor_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, status) =
        crate::bench_e2b::bench_only("corral run", &[("TMPDIR", tmp.path().as_os_str())]);
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
            assert_eq!(status, Some(0), "{report}");
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
