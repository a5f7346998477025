//! The bench end to end: memory backend rows only, 3 iterations, JSON shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use corral_bench::{
    BenchConfig, BenchError, BoxFuture, Group, Measure, Outcome, Role, Setup, run, run_with,
};

#[tokio::test]
async fn memory_rows_with_three_iterations_make_well_formed_json() {
    let config = BenchConfig {
        iterations: Some(3),
        only: vec!["memory".into()],
        docker_image: None,
        ..BenchConfig::default()
    };
    let report = run(&config).await.expect("the bench runs");
    let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();

    let host = &json["host"];
    assert!(host["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(host["cores"].as_u64().is_some_and(|c| c >= 1));
    assert!(host["memory_bytes"].as_u64().is_some_and(|m| m > 0));
    assert_eq!(host["corral_version"], env!("CARGO_PKG_VERSION"));
    let date = host["date"].as_str().unwrap();
    assert_eq!(date.len(), 20, "{date}");
    assert!(date.ends_with('Z') && date.as_bytes()[10] == b'T', "{date}");
    assert_eq!(json["iterations_requested"], 3);
    assert_eq!(json["only"], serde_json::json!(["memory"]));

    let rows = json["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    // The floor of the kept group runs too, so the ratios mean something.
    assert_eq!(
        names,
        [
            "fork+exec /bin/true",
            "memory create+exec+destroy",
            "memory exec"
        ]
    );
    for row in rows {
        let name = row["name"].as_str().unwrap();
        assert_eq!(row["group"], "start", "{name}");
        assert_eq!(row["outcome"], "measured", "{name}: {}", row["note"]);
        assert_eq!(row["iterations"], 3, "{name}");
        let (p10, med, p90) = (
            row["p10_us"].as_f64().unwrap(),
            row["median_us"].as_f64().unwrap(),
            row["p90_us"].as_f64().unwrap(),
        );
        assert!(
            0.0 < p10 && p10 <= med && med <= p90,
            "{name}: {p10} {med} {p90}"
        );
        let ratio = row["ratio_to_floor"].as_f64().unwrap();
        assert!((ratio - med / rows[0]["median_us"].as_f64().unwrap()).abs() < 1e-9);
        assert!(row.get("note").is_some() && row.get("metric").is_some());
    }
    assert_eq!(rows[0]["role"], "floor");
    assert_eq!(rows[0]["ratio_to_floor"], 1.0);
    assert_eq!(rows[1]["role"], "compared");

    let table = report.table();
    assert_eq!(table.lines().count(), 2 + rows.len(), "{table}");
    assert!(table.contains("memory exec"), "{table}");
}

#[tokio::test]
async fn a_filter_matching_nothing_names_what_exists() {
    let config = BenchConfig {
        iterations: Some(1),
        only: vec!["nosuchrow".into()],
        docker_image: None,
        ..BenchConfig::default()
    };
    let e = run(&config).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, BenchError::UnknownFilter { .. }), "{text}");
    assert!(
        text.contains("\"nosuchrow\"") && text.contains("local exec"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

/// A measure that fails at a chosen iteration and counts its teardowns.
struct Flaky {
    fail_at: Option<u32>,
    ran: u32,
    teardowns: Arc<AtomicU32>,
    skip: bool,
}

impl Measure for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }
    fn group(&self) -> Group {
        Group::Footprint
    }
    fn role(&self) -> Role {
        Role::Compared
    }
    fn default_iterations(&self) -> u32 {
        5
    }
    fn setup(&mut self) -> BoxFuture<'_, Result<Setup, BenchError>> {
        Box::pin(async move {
            Ok(if self.skip {
                Setup::Skip("not here".into())
            } else {
                Setup::Ready
            })
        })
    }
    fn iteration(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        Box::pin(async move {
            self.ran += 1;
            if Some(self.ran) == self.fail_at {
                return Err(BenchError::io("flaky", "broke"));
            }
            Ok(())
        })
    }
    fn teardown(&mut self) -> BoxFuture<'_, Result<(), BenchError>> {
        self.teardowns.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn failures_and_skips_become_rows_and_always_tear_down() {
    let teardowns = Arc::new(AtomicU32::new(0));
    let flaky = |fail_at, skip| -> Box<dyn Measure> {
        Box::new(Flaky {
            fail_at,
            ran: 0,
            teardowns: teardowns.clone(),
            skip,
        })
    };
    let measures = vec![flaky(Some(4), false), flaky(None, true), flaky(None, false)];
    let report = run_with(measures, &BenchConfig::default()).await.unwrap();
    let r = &report.rows;
    assert_eq!(r[0].outcome, Outcome::Failed);
    assert_eq!(r[0].note.as_deref(), Some("iteration 2: flaky: broke"));
    assert_eq!((r[0].median_us, r[0].iterations), (None, 0));
    assert_eq!(r[1].outcome, Outcome::Skipped);
    assert_eq!(r[1].note.as_deref(), Some("not here"));
    assert_eq!(r[2].outcome, Outcome::Measured);
    // 2 warm-ups excluded: 5 timed iterations, no floor in the group.
    assert_eq!((r[2].iterations, r[2].ratio_to_floor), (5, None));
    assert_eq!(teardowns.load(Ordering::SeqCst), 3);
}
