//! A process outlives the program objects that started it: after the
//! backend and every handle are dropped, a second backend opened on the same
//! state directory (as another program would) reattaches through the
//! locator, reads the logs from where it likes, and kills the process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use corral_backend_local::LocalBackend;
use corral_sdk::processes::{LogCursor, ProcessState};
use corral_sdk::{Command, CreateOptions, ExitStatus, Sandbox, SignalName, StreamKind};

// SDK spec, "What the core does for you": background processes can be
// reattached by name.
#[tokio::test]
async fn another_program_reattaches_through_the_locator() {
    let state = tempfile::tempdir().unwrap();
    let locator = {
        let first = Arc::new(LocalBackend::open(state.path()).unwrap());
        let sb = Sandbox::create(first, CreateOptions::default())
            .await
            .unwrap();
        sb.processes()
            .start(
                "ticker",
                Command::shell("i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done")
                    .unwrap(),
            )
            .await
            .unwrap();
        sb.locator()
        // The first backend and every handle on it are dropped here.
    };

    let second = Arc::new(LocalBackend::open(state.path()).unwrap());
    let sb = Sandbox::connect(second, &locator).await.unwrap();
    let h = sb.processes().attach("ticker").await.unwrap();
    assert_eq!(h.status().await.unwrap().state, ProcessState::Running);
    let started = Instant::now();
    let mut cursor = LogCursor::default();
    let mut text = String::new();
    while !text.contains("tick 3\n") {
        let logs = h.logs(cursor).await.unwrap();
        text.push_str(&logs.text(StreamKind::Stdout));
        cursor = logs.next;
        assert!(started.elapsed() < Duration::from_secs(60), "{text:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text.starts_with("tick 1\ntick 2\ntick 3\n"), "{text:?}");
    // Every chunk ends at a line end while the process runs.
    assert!(text.ends_with('\n'));
    let state_after = h.kill().await.unwrap();
    assert_eq!(
        state_after,
        ProcessState::Exited(ExitStatus::Signal(SignalName::Sigterm))
    );
    // Once it has ended, the rest of the log comes with `ended`.
    let rest = h.logs(cursor).await.unwrap();
    assert!(rest.ended);
    sb.destroy().await.unwrap();
}
