//! A run tells its observer of each case as it settles: the heading first,
//! then one line per case in the suite's order — exactly the report's
//! table without its closing line, so that `corral conformance` can print
//! the table as it goes instead of all at once at the end.

use std::sync::{Arc, Mutex};

use corral_conformance::sdk::{SdkCase, run_sdk_target_observed};
use corral_conformance::targets::MemoryTarget;
use corral_conformance::{Observer, SuiteCase, run_observed};
use corral_contract::ConformanceCase;

/// What an observer was told, in order (the heading must come first).
#[derive(Debug, Default, Clone)]
struct Told(Arc<Mutex<Vec<String>>>);

impl<C: SuiteCase> Observer<C> for Told {
    fn began(&mut self, heading: &str) {
        let mut lines = self.0.lock().unwrap();
        assert!(lines.is_empty(), "began after {lines:?}");
        lines.push(heading.to_string());
    }

    fn settled(&mut self, line: &str) {
        self.0.lock().unwrap().push(line.to_string());
    }
}

fn without_summary(table: &str) -> Vec<String> {
    let mut lines: Vec<String> = table.lines().map(str::to_string).collect();
    lines.pop();
    lines
}

#[tokio::test]
async fn the_contract_suite_tells_each_case_as_the_table_shows_it() {
    let target = MemoryTarget::new();
    let mut told = Told::default();
    let report = run_observed(&target, &mut told).await.unwrap();
    let lines = told.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 1 + ConformanceCase::ALL.len(), "{lines:?}");
    assert_eq!(lines, without_summary(&report.table()));
}

#[tokio::test]
async fn the_sdk_suite_tells_each_case_as_the_table_shows_it() {
    let target = MemoryTarget::new();
    let mut told = Told::default();
    let report = run_sdk_target_observed(&target, &mut told).await.unwrap();
    let lines = told.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 1 + SdkCase::ALL.len(), "{lines:?}");
    assert_eq!(lines, without_summary(&report.table()));
}
