//! The wire under faults, through a proxy that drops, delays, duplicates
//! and reorders frames and cuts connections (`fault_proxy`): stdout stays
//! whole, in order and unduplicated inside the replay window; beyond it
//! the run fails closed with a typed error; a duplicated `destroy`,
//! `destroySnapshot` or handoff rollback settles the same way as one, and
//! one whose reply was lost is sent again by the client. (Reuse of
//! connections and the retry rule's other rows are `reuse`.)

use super::common;
use super::fault_proxy;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use common::{provision_active, provision_request, read_to_end, serve, token, write_all};
use corral_backend_memory::MemoryBackend;
use corral_conformance::targets::backend_inventory;
use corral_contract::*;
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;
use corral_wire::protocol::{REPLAY_WINDOW_BYTES, Stream};
use corral_wire::{RunningServer, WireProvider};
use fault_proxy::{Dir, FaultProxy, FrameFault, Pick, Plan, UnaryFault};

/// The memory backend behind a server, a proxy injecting `plan` in front
/// of it, and the runtime over a `WireProvider` that goes through the
/// proxy.
struct Rig {
    backend: Arc<MemoryBackend>,
    server: RunningServer,
    proxy: FaultProxy,
    client: WireProvider,
    runtime: Runtime<WireProvider>,
}

impl Rig {
    async fn new(plan: Plan) -> Self {
        let backend = Arc::new(MemoryBackend::new());
        let adapter = ContractAdapter::new(Arc::clone(&backend), envelopes::memory()).unwrap();
        let server = serve(adapter).await;
        let proxy = FaultProxy::to(server.addr(), plan).await;
        let client = WireProvider::connect(&proxy.endpoint(), token())
            .await
            .unwrap();
        let runtime = Runtime::new(client.clone()).unwrap();
        Self {
            backend,
            server,
            proxy,
            client,
            runtime,
        }
    }

    async fn active(&self) -> SandboxInstance {
        self.active_with(RetentionMode::EphemeralZdr).await
    }

    async fn active_with(&self, retention: RetentionMode) -> SandboxInstance {
        let request = provision_request(self.runtime.capabilities(), "memory", retention);
        provision_active(&self.runtime, request).await
    }

    async fn open(&self, instance: &SandboxInstance, argv: &[&str]) -> Box<dyn LiveProcess> {
        let request = OpenProcessRequest {
            instance_id: instance.instance_id.clone(),
            process: SandboxProcessRequest {
                executable: Executable::new(argv[0]).unwrap(),
                arguments: Arguments::new(argv[1..].iter().copied()).unwrap(),
                working_directory: None,
                environment: Environment::new(),
            },
        };
        self.runtime.open_process(request).await.unwrap()
    }

    /// Tears everything down and checks nothing is left in the backend.
    async fn finish(self, instance: SandboxInstance) {
        self.runtime.destroy(instance.instance_id).await.unwrap();
        let left = backend_inventory(&*self.backend).await.unwrap();
        assert!(left.is_empty(), "nothing is left behind: {left}");
        self.server.shut_down().await;
    }
}

/// Bytes that show a loss, a duplicate or a reordering wherever it
/// happens: no 251-byte window repeats within the payload's period.
fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i / 251) as u8)
        .collect()
}

/// Echoes `bytes` through `cat` behind the rig's proxy: what came back
/// and the exit.
async fn echo(rig: &Rig, instance: &SandboxInstance, bytes: &[u8]) -> (Vec<u8>, ProcessExit) {
    let mut live = rig.open(instance, &["cat"]).await;
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    let reader = tokio::spawn(async move { read_to_end(&mut output).await });
    for piece in bytes.chunks(100_000) {
        write_all(&mut input, piece).await;
    }
    poll_fn(|cx| input.as_mut().poll_close(cx)).await.unwrap();
    let echoed = reader.await.unwrap();
    let exit = live.wait().await.unwrap();
    live.destroy().await.unwrap();
    (echoed, exit)
}

fn assert_lossless(echoed: &[u8], sent: &[u8], context: &str) {
    assert_eq!(echoed.len(), sent.len(), "{context}: length");
    let first = echoed.iter().zip(sent).position(|(a, b)| a != b);
    assert_eq!(first, None, "{context}: first differing byte");
}

/// More than half the replay window: the client acknowledges at least
/// once on the way.
const LONG: usize = (REPLAY_WINDOW_BYTES / 2 + 500_000) as usize;

const SUCCESS: ProcessExit = ProcessExit::Code(ExitCode::SUCCESS);

/// Every rule of `plan` fired (else the test proved nothing about it).
fn assert_all_fired(proxy: &FaultProxy, plan_len: usize) {
    let fired = proxy.fired();
    assert_eq!(
        fired.len(),
        plan_len,
        "every fault was injected: {fired:#?}"
    );
}

/// Echoes [`LONG`] bytes through a rig injecting `plan`, checks they came
/// back whole with a clean exit and that every rule fired, tears the rig
/// down, and answers how many sockets the session took.
async fn echo_long_through(plan: Plan, context: &str) -> usize {
    let rules = plan.frames.len();
    let rig = Rig::new(plan).await;
    let instance = rig.active().await;
    let sent = payload(LONG);
    let (echoed, exit) = echo(&rig, &instance, &sent).await;
    assert_lossless(&echoed, &sent, context);
    assert_eq!(exit, SUCCESS, "{context}: exit");
    assert_all_fired(&rig.proxy, rules);
    let sockets = rig.proxy.sockets();
    rig.finish(instance).await;
    sockets
}

// Contract spec, "openProcess": "stdout is lossless only inside a declared
// replay window"; output delivers "ordered bytes with a real EOF, nothing
// lost, nothing duplicated". Frames dropped with their connection (in
// both directions, data and control) are recovered by `replay`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_lossless_through_dropped_frames_and_cuts() {
    let plan = Plan::new()
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 2, FrameFault::Drop)
        .frame(Dir::Up, Pick::Data(Stream::Stdin), 8, FrameFault::Drop)
        .frame(Dir::Up, Pick::Control("ack"), 0, FrameFault::Drop)
        .frame(Dir::Down, Pick::Control("credit"), 6, FrameFault::Drop)
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 20, FrameFault::Cut)
        .frame(Dir::Up, Pick::Any, 40, FrameFault::Cut);
    let sockets = echo_long_through(plan, "drops and cuts").await;
    assert!(sockets >= 2, "each cut cost a new socket");
}

// Contract spec, "openProcess": output delivers ordered bytes, nothing lost,
// nothing duplicated; a delay on an ordered stream is only latency.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_lossless_through_delayed_frames() {
    let pause = FrameFault::Delay(Duration::from_millis(150));
    let plan = Plan::new()
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 1, pause)
        .frame(Dir::Up, Pick::Data(Stream::Stdin), 3, pause)
        .frame(Dir::Down, Pick::Control("credit"), 2, pause)
        .frame(Dir::Up, Pick::Control("ack"), 0, pause)
        .frame(Dir::Up, Pick::Control("half_close"), 0, pause)
        .frame(Dir::Down, Pick::Control("half_close"), 0, pause)
        .frame(Dir::Down, Pick::Control("exit"), 0, pause);
    let sockets = echo_long_through(plan, "delays").await;
    assert_eq!(sockets, 1, "a delay costs no socket");
}

// Contract spec, "openProcess": nothing duplicated. The offsets decide: a
// data frame the receiver already has is discarded, and every control
// frame but `signal` is idempotent (credit and ack only move forward,
// half_close names its offset, exit settles once, settled answers once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_lossless_through_duplicated_frames() {
    let twice = FrameFault::Duplicate;
    let plan = Plan::new()
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 1, twice)
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 7, twice)
        .frame(Dir::Up, Pick::Data(Stream::Stdin), 3, twice)
        .frame(Dir::Down, Pick::Control("credit"), 2, twice)
        .frame(Dir::Up, Pick::Control("ack"), 0, twice)
        .frame(Dir::Up, Pick::Control("half_close"), 0, twice)
        .frame(Dir::Down, Pick::Control("half_close"), 0, twice)
        .frame(Dir::Down, Pick::Control("exit"), 0, twice)
        .frame(Dir::Up, Pick::Control("destroy"), 0, twice)
        .frame(Dir::Down, Pick::Control("settled"), 0, twice);
    let sockets = echo_long_through(plan, "duplicates").await;
    assert_eq!(sockets, 1, "a duplicate costs no socket");
}

// Contract spec, "openProcess": ordered bytes, nothing lost. Frames of
// different streams may pass each other; a data frame ahead of what the
// receiver has (its predecessor late or lost) shows a gap, and the
// receiver abandons the socket so that `replay` resends from its offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_lossless_through_reordered_and_lost_frames() {
    let plan = Plan::new()
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 3, FrameFault::Swap)
        .frame(Dir::Up, Pick::Data(Stream::Stdin), 5, FrameFault::Swap)
        .frame(Dir::Down, Pick::Control("credit"), 4, FrameFault::Swap)
        .frame(Dir::Up, Pick::Control("ack"), 0, FrameFault::Swap)
        .frame(Dir::Down, Pick::Data(Stream::Stdout), 12, FrameFault::Lose)
        .frame(Dir::Up, Pick::Data(Stream::Stdin), 14, FrameFault::Lose);
    let sockets = echo_long_through(plan, "reorders and losses").await;
    // A lost data frame shows at the next one of its stream, which is
    // ahead of what the receiver has: that socket is let go and replayed.
    assert!(sockets >= 2, "a gap cost a new socket");
}

// Contract spec, "openProcess": nothing lost, nothing duplicated, under
// every fault at once; each seed draws its own plan, and a failure names
// the seed that reproduces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_lossless_under_seeded_mixed_faults() {
    let faults = [
        FrameFault::Delay(Duration::from_millis(40)),
        FrameFault::Duplicate,
        FrameFault::Swap,
        FrameFault::Lose,
        FrameFault::Drop,
        FrameFault::Cut,
    ];
    for seed in 1..=6u64 {
        let rig = Rig::new(Plan::seeded(seed, 8, 40, &faults)).await;
        let instance = rig.active().await;
        let sent = payload(1_500_000);
        let run = tokio::time::timeout(Duration::from_secs(60), echo(&rig, &instance, &sent));
        let Ok((echoed, exit)) = run.await else {
            panic!(
                "seed {seed}: the run never settled: {:#?}",
                rig.proxy.fired()
            );
        };
        assert_lossless(&echoed, &sent, &format!("seed {seed}"));
        assert_eq!(exit, SUCCESS, "seed {seed}");
        assert!(!rig.proxy.fired().is_empty(), "seed {seed}: nothing fired");
        rig.finish(instance).await;
    }
}

/// Reads `source` to its EOF or its first error.
async fn read_until_error(
    source: &mut Pin<Box<dyn ByteSource>>,
) -> (Vec<u8>, Result<(), SandboxError>) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match poll_fn(|cx| source.as_mut().poll_read(cx, &mut buf)).await {
            Ok(0) => return (out, Ok(())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Err(e)),
        }
    }
}

// Contract spec, "openProcess": stdout is lossless inside the replay
// window. A process that writes more than the window while its client is
// away is paused on the full window, not truncated: everything arrives
// once the client is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_beyond_the_window_waits_for_a_client_that_comes_back() {
    let rig = Rig::new(Plan::new()).await;
    let instance = rig.active().await;
    let total = 6_000_000usize;
    let mut live = rig
        .open(
            &instance,
            &[
                "sh",
                "-c",
                &format!("yes 0123456789abcdef | head -c {total}"),
            ],
        )
        .await;
    let mut output = live.take_output().unwrap();
    rig.proxy.outage(true);
    rig.proxy.cut();
    // Away for longer than the first two reconnection pauses, inside the
    // schedule: the process outruns the 4 MiB window meanwhile.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    rig.proxy.outage(false);
    let (echoed, ended) = read_until_error(&mut output).await;
    ended.unwrap();
    let line = b"0123456789abcdef\n";
    let expected: Vec<u8> = line.iter().copied().cycle().take(total).collect();
    assert_lossless(&echoed, &expected, "output beyond the window");
    assert_eq!(live.wait().await.unwrap(), SUCCESS);
    assert!(rig.proxy.sockets() >= 2, "the session was replayed");
    live.destroy().await.unwrap();
    rig.finish(instance).await;
}

// Contract spec, "openProcess": "a long enough disconnection kills a Run
// that would have survived in-process" — it fails closed, with a typed
// error: the streams deliver what arrived, then fail; `wait` fails; the
// input refuses; nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_replay_window_the_run_fails_closed_with_a_typed_error() {
    let rig = Rig::new(Plan::new()).await;
    let instance = rig.active().await;
    let mut live = rig.open(&instance, &["cat"]).await;
    let mut input = live.take_input().unwrap();
    let mut output = live.take_output().unwrap();
    let head = payload(50_000);
    write_all(&mut input, &head).await;
    rig.proxy.outage(true);
    rig.proxy.cut();
    // Longer than every reconnection the client makes (50 ms, 250 ms,
    // 1 s, 3 s): it gives up.
    let (echoed, ended) = tokio::time::timeout(Duration::from_secs(30), async {
        read_until_error(&mut output).await
    })
    .await
    .expect("the session fails within its reconnection schedule");
    let unreachable =
        SandboxError::operation_failed(Operation::OpenProcess, FailureReason::PlatformUnavailable);
    assert_eq!(ended, Err(unreachable.clone()));
    assert!(
        head.starts_with(&echoed),
        "what arrived is a prefix, in order"
    );
    assert_eq!(live.wait().await, Err(unreachable.clone()));
    let write = poll_fn(|cx| input.as_mut().poll_write(cx, b"more")).await;
    assert_eq!(write, Err(unreachable));
    rig.proxy.outage(false);
    // The session is over for good: destroy settles.
    live.destroy().await.unwrap();
    drop(live);
    rig.finish(instance).await;
}

/// The replies the server gave for `path`: each `200`, the same body.
fn assert_settled_alike(proxy: &FaultProxy, path: &str, count: usize) {
    let replies = proxy.replies(path);
    assert_eq!(replies.len(), count, "{path}: {replies:?}");
    for reply in &replies {
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
        assert_eq!(reply.body, replies[0].body, "{path}: settled alike");
    }
}

// Contract spec, "Allocation handoff": "destroy, destroySnapshot, and
// rollback may all be invoked again after a lost response; each must
// settle the same way." A duplicated request settles as a single one; one
// whose reply was lost the client sends again itself, once, on a fresh
// connection; lost twice, the caller gets the unavailable error and asks
// again. Every one of them settles alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_destroy_settles_the_same_way() {
    let plan = Plan::new()
        .unary("/v1/destroy", 0, UnaryFault::Duplicate)
        .unary("/v1/destroy", 1, UnaryFault::DropReply)
        .unary("/v1/destroy", 3, UnaryFault::DropReply)
        .unary("/v1/destroy", 4, UnaryFault::DropReply);
    let rig = Rig::new(plan).await;
    let first = rig.active().await;
    let second = rig.active().await;
    let third = rig.active().await;
    rig.client.destroy(first.instance_id.clone()).await.unwrap();
    assert_settled_alike(&rig.proxy, "/v1/destroy", 2);
    // The reply is lost: the client cannot know the instance is gone, and
    // asks again.
    rig.client
        .destroy(second.instance_id.clone())
        .await
        .unwrap();
    assert_settled_alike(&rig.proxy, "/v1/destroy", 4);
    // Lost again the second time: the client asked once more, no more.
    let lost = rig.client.destroy(third.instance_id.clone()).await;
    assert_eq!(
        lost,
        Err(SandboxError::operation_failed(
            Operation::Destroy,
            FailureReason::PlatformUnavailable
        ))
    );
    assert_settled_alike(&rig.proxy, "/v1/destroy", 6);
    rig.client.destroy(third.instance_id.clone()).await.unwrap();
    assert_settled_alike(&rig.proxy, "/v1/destroy", 7);
    assert_all_fired(&rig.proxy, 4);
    let left = backend_inventory(&*rig.backend).await.unwrap();
    assert!(left.is_empty(), "nothing is left behind: {left}");
    rig.server.shut_down().await;
}

fn snapshot_request(instance: &SandboxInstance) -> SnapshotRequest {
    SnapshotRequest {
        instance_id: instance.instance_id.clone(),
        expires_at: common::in_seconds(600),
    }
}

// Contract spec, "Allocation handoff": destroySnapshot may be invoked again
// after a lost response and must settle the same way; the client sends it
// again itself when its reply is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_destroy_snapshot_settles_the_same_way() {
    let plan = Plan::new()
        .unary("/v1/destroy_snapshot", 0, UnaryFault::Duplicate)
        .unary("/v1/destroy_snapshot", 1, UnaryFault::DropReply);
    let rig = Rig::new(plan).await;
    let instance = rig.active_with(RetentionMode::Durable).await;
    let mut snapshots = Vec::new();
    for _ in 0..2 {
        let handoff = rig.runtime.snapshot(snapshot_request(&instance)).await;
        snapshots.push(handoff.unwrap().into_parts().0.snapshot_id);
    }
    let inventory = backend_inventory(&*rig.backend).await.unwrap();
    assert_eq!(inventory.snapshots.len(), 2, "{inventory}");
    rig.client
        .destroy_snapshot(snapshots[0].clone())
        .await
        .unwrap();
    assert_settled_alike(&rig.proxy, "/v1/destroy_snapshot", 2);
    rig.client
        .destroy_snapshot(snapshots[1].clone())
        .await
        .unwrap();
    assert_settled_alike(&rig.proxy, "/v1/destroy_snapshot", 4);
    assert_all_fired(&rig.proxy, 2);
    let inventory = backend_inventory(&*rig.backend).await.unwrap();
    assert!(inventory.snapshots.is_empty(), "{inventory}");
    rig.finish(instance).await;
}

// Contract spec, "Allocation handoff": rollback is at-least-once with
// idempotent effect. A rollback request duplicated on the way runs the
// compensation once and answers both alike; one whose reply was lost is
// sent again by the client, and lost twice, asked again by the caller,
// and settles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicated_rollback_settles_the_same_way() {
    let plan = Plan::new()
        .unary("/v1/provision/rollback", 0, UnaryFault::Duplicate)
        .unary("/v1/snapshot/rollback", 0, UnaryFault::DropReply)
        .unary("/v1/snapshot/rollback", 1, UnaryFault::DropReply);
    let rig = Rig::new(plan).await;
    let request = provision_request(
        rig.client.capabilities(),
        "memory",
        RetentionMode::EphemeralZdr,
    );
    let (_, rollback) = rig.client.provision(request).await.unwrap().into_parts();
    rollback.rollback().await.unwrap();
    assert_settled_alike(&rig.proxy, "/v1/provision/rollback", 2);
    let left = backend_inventory(&*rig.backend).await.unwrap();
    assert!(left.is_empty(), "the compensation ran: {left}");

    let instance = rig.active_with(RetentionMode::Durable).await;
    let handoff = rig.client.snapshot(snapshot_request(&instance)).await;
    let (_, rollback) = handoff.unwrap().into_parts();
    let lost = rollback.rollback().await;
    assert_eq!(
        lost,
        Err(SandboxError::operation_failed(
            Operation::Rollback(Compensated::Snapshot),
            FailureReason::PlatformUnavailable
        ))
    );
    assert_settled_alike(&rig.proxy, "/v1/snapshot/rollback", 2);
    rollback.rollback().await.unwrap();
    assert_settled_alike(&rig.proxy, "/v1/snapshot/rollback", 3);
    let inventory = backend_inventory(&*rig.backend).await.unwrap();
    assert!(inventory.snapshots.is_empty(), "{inventory}");
    rig.finish(instance).await;
}
