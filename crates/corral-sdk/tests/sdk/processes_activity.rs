//! A running background process is activity: garbage collection spares its
//! sandbox until the process ends (by itself or by `kill`).

use crate::processes_support;
use crate::sandbox_support;
use std::time::Duration;

use corral_sdk::{Command, SpareReason, gc};

const RECORD: &str = "/.corral/activity/proc-svc";

#[tokio::test]
async fn gc_spares_a_sandbox_while_its_process_runs() {
    for target in [sandbox_support::memory(), sandbox_support::local()] {
        let sb = processes_support::sandbox(&target).await;
        let p = sb.provider().to_string();
        let procs = sb.processes();

        // Ends by itself: once it has ended its record is gone.
        procs
            .start("svc", Command::shell("exit 0").unwrap())
            .await
            .unwrap();
        procs.wait("svc", Duration::from_secs(60)).await.unwrap();
        assert!(!sb.files().exists(RECORD).await.unwrap(), "{p}");

        procs
            .start("svc", Command::shell("sleep 60").unwrap())
            .await
            .unwrap();
        assert!(sb.files().exists(RECORD).await.unwrap(), "{p}");
        let report = gc(target.backend.clone(), Duration::ZERO).await.unwrap();
        assert!(report.removed.is_empty(), "{p}: {report:?}");
        assert_eq!(report.spared.len(), 1, "{p}: {report:?}");
        assert!(
            matches!(report.spared[0].reason, SpareReason::RunInProgress { .. }),
            "{p}: {report:?}"
        );

        // Killed: the record goes with it, and gc may reap the sandbox.
        procs.kill("svc").await.unwrap();
        assert!(!sb.files().exists(RECORD).await.unwrap(), "{p}");
        let report = gc(target.backend.clone(), Duration::ZERO).await.unwrap();
        assert_eq!(report.removed, vec![sb.id().to_string()], "{p}: {report:?}");
    }
}
