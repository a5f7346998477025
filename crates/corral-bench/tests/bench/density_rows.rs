//! The density group's rows, in shape only (no time is asserted): the
//! idle-density row and the concurrent-exec row on the memory backend,
//! with tiny counts, report every field of their figure in the JSON.

use corral_backend::Command;
use corral_bench::{BenchConfig, ConcurrentExecs, IdleDensity, Measure, run_with, scratch_opener};
use corral_registry::BackendKind;

fn config() -> BenchConfig {
    BenchConfig {
        iterations: Some(2),
        ..BenchConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_density_reports_memory_and_the_growth_of_a_create() {
    let memory = BackendKind::Memory;
    let rows: Vec<Box<dyn Measure>> = vec![Box::new(IdleDensity::new(
        memory.name(),
        scratch_opener(memory),
        10,
    ))];
    let report = run_with(rows, &config()).await.unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    let row = &json["rows"][0];
    assert_eq!(row["name"], "density: 10 idle memory sandboxes");
    assert_eq!(row["group"], "density");
    assert_eq!(row["outcome"], "measured", "{}", row["note"]);
    // The count is the row's meaning: `iterations` does not change it.
    assert_eq!(row["iterations"], 10);
    assert_eq!(row["metric"]["kind"], "density", "{row}");
    let figure = &row["metric"]["value"];
    assert_eq!(figure["sandboxes"], 10);
    for field in [
        "host_bytes_per_sandbox",
        "first_tenth_create_us",
        "last_tenth_create_us",
    ] {
        assert!(figure[field].is_f64(), "{field}: {figure}");
    }
    // Present, a number or null where the backend reports no usage.
    let own = &figure["sandbox_bytes_per_sandbox"];
    assert!(own.is_f64() || own.is_null(), "{figure}");
    assert!(row["note"].as_str().unwrap().contains("10 idle"), "{row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_execs_report_latency_percentiles_and_throughput() {
    let command = Command::argv(["true"]).unwrap();
    let rows: Vec<Box<dyn Measure>> = vec![Box::new(ConcurrentExecs::new(
        BackendKind::Memory,
        command,
        4,
    ))];
    let report = run_with(rows, &config()).await.unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    let row = &json["rows"][0];
    assert_eq!(
        row["name"],
        "density: 4 concurrent execs through corral serve, memory, 127.0.0.1"
    );
    assert_eq!(row["group"], "density");
    assert_eq!(row["outcome"], "measured", "{}", row["note"]);
    assert_eq!(row["iterations"], 2);
    assert_eq!(row["metric"]["kind"], "concurrency", "{row}");
    let figure = &row["metric"]["value"];
    assert_eq!(figure["execs"], 4);
    for field in ["median_us", "p95_us", "execs_per_s"] {
        assert!(figure[field].is_f64(), "{field}: {figure}");
    }
}

/// A zero count is refused with one line naming it, before anything runs.
#[tokio::test]
async fn zero_counts_are_refused() {
    for (config, what) in [
        (
            BenchConfig {
                density: Some(0),
                ..BenchConfig::default()
            },
            "density",
        ),
        (
            BenchConfig {
                concurrent_execs: Some(0),
                ..BenchConfig::default()
            },
            "concurrent execs",
        ),
    ] {
        let e = run_with(Vec::new(), &config).await.unwrap_err();
        assert_eq!(e.to_string(), format!("{what}: must be at least 1"));
    }
}

/// The group's rows are named after it, not after a backend, so a filter
/// by backend (`--only linux`, `--only memory`) never pulls in a hundred
/// sandboxes or a burst of a hundred execs.
#[test]
fn density_rows_are_named_after_their_group() {
    let rows = corral_bench::density_measures(&BenchConfig::default());
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert!(row.name().starts_with("density: "), "{}", row.name());
        assert_eq!(row.group().as_str(), "density", "{}", row.name());
    }
}
