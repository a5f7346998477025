//! The nine contract cases over the wire against the memory oracle: the
//! same outcomes as in process (nine passed), and nothing left behind.

use super::common;
use common::WireTarget;
use corral_conformance::targets::{MemoryTarget, backend_inventory};
use corral_conformance::{Outcome, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nine_cases_pass_over_the_wire_on_memory() {
    let in_process = run(&MemoryTarget::new()).await.unwrap();
    let target = WireTarget::over(MemoryTarget::new()).await;
    let report = run(&target).await.unwrap();
    print!("{}", report.table());
    assert_eq!(report.count(Outcome::Passed), 9, "{}", report.table());
    assert_eq!(report.run.envelope, in_process.run.envelope);
    assert_eq!(report.run.tokens, in_process.run.tokens);
    let outcomes = |r: &corral_conformance::Report| {
        r.cases
            .iter()
            .map(|c| (c.name, c.outcome))
            .collect::<Vec<_>>()
    };
    assert_eq!(outcomes(&report), outcomes(&in_process));
    let left = backend_inventory(&**target.inner.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
}
