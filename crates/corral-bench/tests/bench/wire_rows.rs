//! The wire rows end to end: each side of a group measured on its own
//! bed, compared with its in-process floor, and torn down.

use corral_bench::{
    BedBackend, BenchConfig, Group, Measure, Metric, Outcome, Role, StreamMeasure, Way, run,
    run_with,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unary_rows_measure_read_file_in_process_and_over_loopback() {
    let config = BenchConfig {
        iterations: Some(5),
        only: vec!["unary".into()],
        docker_image: None,
        ..BenchConfig::default()
    };
    let report = run(&config).await.expect("the bench runs");
    let names: Vec<&str> = report.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["in-process read_file 1 KiB", "wire read_file 1 KiB"]
    );
    for row in &report.rows {
        assert_eq!(
            row.outcome,
            Outcome::Measured,
            "{}: {:?}",
            row.name,
            row.note
        );
        assert_eq!(
            (row.group, row.iterations),
            (Group::Unary, 5),
            "{}",
            row.name
        );
        let (p10, median, p90) = (
            row.p10_us.unwrap(),
            row.median_us.unwrap(),
            row.p90_us.unwrap(),
        );
        assert!(0.0 < p10 && p10 <= median && median <= p90, "{}", row.name);
    }
    let (floor, wire) = (&report.rows[0], &report.rows[1]);
    assert_eq!((floor.role, wire.role), (Role::Floor, Role::Compared));
    assert_eq!(floor.ratio_to_floor, Some(1.0));
    let ratio = wire.ratio_to_floor.unwrap();
    assert!((ratio - wire.median_us.unwrap() / floor.median_us.unwrap()).abs() < 1e-9);
    assert!(wire.note.as_deref().unwrap().contains("127.0.0.1"));
}

/// A 4 MiB stream on the local backend (any user, any host with `dd`).
fn small_stream(way: Way) -> Box<dyn Measure> {
    Box::new(StreamMeasure::on(way, BedBackend::Local, 4))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_rows_report_throughput_and_the_target_verdict() {
    let measures = vec![small_stream(Way::InProcess), small_stream(Way::Loopback)];
    let config = BenchConfig {
        iterations: Some(2),
        ..BenchConfig::default()
    };
    let report = run_with(measures, &config).await.expect("the bench runs");
    let rows = &report.rows;
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(
            row.outcome,
            Outcome::Measured,
            "{}: {:?}",
            row.name,
            row.note
        );
        assert_eq!(row.group, Group::Stream);
        let Some(Metric::ThroughputMibPerS(mib)) = row.metric else {
            panic!("{}: no throughput", row.name);
        };
        // 4 MiB in the median time, in MiB/s.
        let expected = 4.0 / (row.median_us.unwrap() / 1e6);
        assert!((mib - expected).abs() < 1e-6 * expected, "{}", row.name);
        assert!(
            row.note
                .as_deref()
                .unwrap()
                .contains("`dd if=/dev/zero bs=1M count=4 status=none`"),
            "{:?}",
            row.note
        );
    }
    assert_eq!(rows[0].name, "in-process openProcess stdout 4 MiB");
    assert_eq!(rows[1].name, "wire openProcess stdout 4 MiB");
    assert!(rows[1].ratio_to_floor.is_some());
    // The target is reported, never asserted: either verdict is a pass here.
    let note = rows[1].note.as_deref().unwrap();
    assert!(
        note.contains("target ≥ 1000 MB/s: met") || note.contains("target ≥ 1000 MB/s: missed"),
        "{note}"
    );
    assert!(!rows[0].note.as_deref().unwrap().contains("target"));
}
