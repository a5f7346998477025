//! The linux backend behind the contract adapter: no case fails, and every
//! skip names the token its envelope does not earn.

mod common;

use common::{assert_skips_name_their_missing_tokens, with_outcome};
use corral_conformance::targets::{LinuxTarget, LinuxTargetError, backend_inventory};
use corral_conformance::{Outcome, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_linux_backend_fails_nothing_and_names_every_skip() {
    let test = "the_linux_backend_fails_nothing_and_names_every_skip";
    let target = match LinuxTarget::new() {
        Ok(t) => t,
        Err(LinuxTargetError::Unavailable(reason)) => {
            println!("SKIP {test}: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let report = run(&target).await.unwrap();
    print!("{}", report.table());
    for c in &report.cases {
        assert_ne!(
            c.outcome,
            Outcome::Failed,
            "{}: {}",
            c.name,
            c.reason.as_deref().unwrap_or("")
        );
    }
    assert_skips_name_their_missing_tokens(&report);
    let planned: Vec<_> = report
        .envelope
        .conformance_plan()
        .into_iter()
        .filter(|(_, missing)| !missing.is_empty())
        .map(|(case, _)| case)
        .collect();
    assert_eq!(with_outcome(&report, Outcome::Skipped), planned);
    let left = backend_inventory(&**target.backend()).await.unwrap();
    assert!(left.is_empty(), "the suite left {left}");
    let dir = target.state_dir().to_path_buf();
    drop(target);
    assert!(
        !dir.exists(),
        "the temporary state directory outlived the target"
    );
}
