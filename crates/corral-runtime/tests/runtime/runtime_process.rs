//! `openProcess`: "The Runner validates `evidence` against the instance and
//! against your own capability envelope before transferring the handle, then
//! re-decodes the exit when `wait` settles." A rejected handle is destroyed
//! "under a 30 s bound" and "both causes" are combined.

use crate::common_runtime;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common_runtime::process::Stream;
use common_runtime::*;
use corral_contract::*;

fn open(id: &InstanceId) -> OpenProcessRequest {
    OpenProcessRequest {
        instance_id: id.clone(),
        process: SandboxProcessRequest {
            executable: Executable::new("agent").unwrap(),
            arguments: Arguments::new(vec![Argument::new("--acp").unwrap()]).unwrap(),
            working_directory: Some(path("/workspace/app")),
            environment: Environment::new(),
        },
    }
}

async fn read_all(source: &mut std::pin::Pin<Box<dyn ByteSource>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4];
    loop {
        let n = std::future::poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf))
            .await
            .unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn open_process_hands_over_a_checked_handle_with_all_three_live_streams() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.process = ProcessScript {
            output: b"{\"jsonrpc\":\"2.0\"}\n".to_vec(),
            exits: vec![ProcessExit::Code(0u8.into())],
            ..ProcessScript::default()
        }
    });
    let mut process = rt.open_process(open(&id)).await.unwrap();
    assert_eq!(process.evidence().instance_id, id);
    let mut input = process.take_input().expect("input");
    let mut output = process.take_output().expect("output");
    assert!(process.take_error().is_some());
    assert!(process.take_input().is_none(), "streams are taken once");
    std::future::poll_fn(|cx| input.as_mut().poll_write(cx, b"prompt"))
        .await
        .unwrap();
    std::future::poll_fn(|cx| input.as_mut().poll_close(cx))
        .await
        .unwrap();
    assert_eq!(
        *rt.provider().log.process.input.lock().unwrap(),
        b"prompt".to_vec()
    );
    assert_eq!(
        rt.provider()
            .log
            .process
            .input_closed
            .load(Ordering::SeqCst),
        1
    );
    assert_eq!(
        read_all(&mut output).await,
        b"{\"jsonrpc\":\"2.0\"}\n".to_vec()
    );
    assert_eq!(process.wait().await.unwrap(), ProcessExit::Code(0u8.into()));
    assert_eq!(
        rt.provider()
            .log
            .process
            .destroys_invoked
            .load(Ordering::SeqCst),
        0
    );
}

#[tokio::test]
async fn evidence_disagreeing_with_the_instance_or_request_fails_identity_and_destroys_the_process()
{
    type Lie = fn(&mut SandboxProcessEvidence);
    let lies: Vec<(&str, Lie)> = vec![
        ("instance_id", |e| {
            e.instance_id = InstanceId::new("inst-other").unwrap()
        }),
        ("provider", |e| {
            e.provider = ProviderId::new("other").unwrap()
        }),
        ("placement", |e| e.placement = Placement::Hosted),
        ("started_at", |e| e.started_at = ts(EXPIRES)),
        ("executable", |e| {
            e.executable = Executable::new("sh").unwrap()
        }),
        ("arguments", |e| e.arguments = Arguments::default()),
        ("working_directory", |e| e.working_directory = None),
    ];
    for (field, lie) in lies {
        let rt = runtime(Fake::new(full_caps()));
        let id = active(&rt, zdr_request()).await;
        rt.provider()
            .knobs(|k| k.process.evidence = Some(Arc::new(lie)));
        let err = rt.open_process(open(&id)).await.err().unwrap();
        protocol_invalid(&err, Operation::OpenProcessIdentity, field);
        let log = &rt.provider().log.process;
        assert_eq!(log.destroys_invoked.load(Ordering::SeqCst), 1, "{field}");
        assert_eq!(log.destroys_completed.load(Ordering::SeqCst), 1, "{field}");
    }
}

#[tokio::test]
async fn a_process_missing_a_stream_fails_identity_and_is_destroyed() {
    for (stream, field) in [
        (Stream::Input, "input"),
        (Stream::Output, "output"),
        (Stream::Error, "error"),
    ] {
        let rt = runtime(Fake::new(full_caps()));
        let id = active(&rt, zdr_request()).await;
        rt.provider().knobs(|k| k.process.missing = Some(stream));
        let err = rt.open_process(open(&id)).await.err().unwrap();
        let (expected, actual) = protocol_invalid(&err, Operation::OpenProcessIdentity, field);
        assert_eq!(
            (expected.as_str(), actual.as_str()),
            ("a live stream", "none")
        );
        let destroyed = rt
            .provider()
            .log
            .process
            .destroys_completed
            .load(Ordering::SeqCst);
        assert_eq!(destroyed, 1, "{field}");
    }
}

#[tokio::test]
async fn a_rejected_process_whose_destroy_exceeds_its_bound_combines_both_causes() {
    let rt = runtime(Fake::new(full_caps())).with_rollback_bound(Duration::from_millis(200));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.process.evidence = Some(Arc::new(|e: &mut SandboxProcessEvidence| {
            e.placement = Placement::Hosted
        }));
        k.process.destroy = DestroyMode::Hang;
    });
    let started = Instant::now();
    let err = rt.open_process(open(&id)).await.err().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    match err {
        SandboxError::SandboxOperationFailed {
            operation,
            reason,
            cause,
        } => {
            assert_eq!(operation, Operation::Rollback(Compensated::OpenProcess));
            assert_eq!(operation.to_string(), "open_process_rollback");
            assert_eq!(reason, FailureReason::TimedOut);
            let cause = cause.expect("the identity failure");
            protocol_invalid(&cause, Operation::OpenProcessIdentity, "placement");
        }
        other => panic!("unexpected {other}"),
    }
    let log = &rt.provider().log.process;
    assert_eq!(log.destroys_invoked.load(Ordering::SeqCst), 1);
    assert_eq!(log.destroys_completed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn wait_is_re_readable_and_every_read_yields_the_first_settlement() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    let exit = ProcessExit::Signal(SignalName::Sigterm);
    rt.provider().knobs(|k| k.process.exits = vec![exit]);
    let process = rt.open_process(open(&id)).await.unwrap();
    for _ in 0..3 {
        assert_eq!(process.wait().await.unwrap(), exit);
    }
    assert_eq!(rt.provider().log.process.waits.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_wait_that_settles_differently_the_second_time_is_protocol_invalid() {
    let rt = runtime(Fake::new(full_caps()));
    let id = active(&rt, zdr_request()).await;
    rt.provider().knobs(|k| {
        k.process.exits = vec![
            ProcessExit::Code(0u8.into()),
            ProcessExit::Signal(SignalName::Sigkill),
        ]
    });
    let process = rt.open_process(open(&id)).await.unwrap();
    assert_eq!(process.wait().await.unwrap(), ProcessExit::Code(0u8.into()));
    let err = process.wait().await.unwrap_err();
    let (expected, actual) = protocol_invalid(&err, Operation::OpenProcess, "exit");
    assert_eq!(
        (expected.as_str(), actual.as_str()),
        ("{\"code\":0}", "{\"signal\":\"SIGKILL\"}")
    );
}
