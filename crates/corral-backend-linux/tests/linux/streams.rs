//! A live process's streams and an exec's pipes, read on the runtime's
//! reactor: a large stream whole and in order, a reader that goes away,
//! stdin fed while the output is read, and a read that needs no thread of
//! tokio's blocking pool.

use std::time::Duration;

use corral_backend::{
    Backend, CollectedOutput, Command, CreateRequest, ExecRequest, ExitStatus, ProcessSpec,
    SignalName, StartedProcess,
};
use corral_backend_linux::LinuxBackend;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;
use common::backend;

/// How long a test waits for a stream or a process before it fails.
const BOUND: Duration = Duration::from_secs(120);

/// `seq -w 0 8388607`: 8,388,608 lines of 8 bytes (seven digits and a
/// newline), exactly 64 MiB, no two lines alike, so a chunk lost, doubled
/// or moved changes the digest.
const SEQ_64_MIB: [&str; 4] = ["seq", "-w", "0", "8388607"];

/// The length and SHA-256 of what [`SEQ_64_MIB`] prints.
fn seq_64_mib_digest() -> (u64, String) {
    let mut hash = Sha256::new();
    let mut line = String::with_capacity(8);
    for i in 0..8_388_608u32 {
        line.clear();
        use std::fmt::Write;
        writeln!(line, "{i:07}").unwrap();
        hash.update(line.as_bytes());
    }
    (64 << 20, hex::encode(hash.finalize()))
}

fn spec(argv: &[&str]) -> ProcessSpec {
    ProcessSpec::new(Command::argv(argv.iter().copied()).unwrap())
}

async fn start(b: &LinuxBackend, id: &str, argv: &[&str]) -> StartedProcess {
    b.process_ops()
        .expect("start_process is declared")
        .start_process(id, spec(argv))
        .await
        .unwrap()
}

/// Reads `stream` to its end in reads of up to 256 KiB; its length and
/// SHA-256.
async fn digest(stream: &mut (impl AsyncReadExt + Unpin)) -> (u64, String) {
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut len = 0u64;
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            return (len, hex::encode(hash.finalize()));
        }
        len += n as u64;
        hash.update(&buf[..n]);
    }
}

// Provider contract, `openProcess`: "`output` delivers ordered bytes with a
// real EOF, nothing lost, nothing duplicated."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_64_mib_stream_is_read_whole_and_in_order_to_its_end() {
    let Some((b, _dir)) = backend("a_64_mib_stream_is_read_whole_and_in_order_to_its_end") else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let want = tokio::task::spawn_blocking(seq_64_mib_digest);
    let mut p = start(&b, &info.id, &SEQ_64_MIB).await;
    let got = tokio::time::timeout(BOUND, digest(&mut p.stdout))
        .await
        .expect("the stream reaches its end");
    assert_eq!(got, want.await.unwrap());
    let status = tokio::time::timeout(BOUND, p.control.wait())
        .await
        .expect("the process exits");
    assert_eq!(status.unwrap(), ExitStatus::Code(0));
    b.destroy(&info.id).await.unwrap();
}

/// The names of the processes in sandbox `id` but PID 1 and the shell
/// that lists them.
async fn others_in(b: &LinuxBackend, id: &str) -> String {
    let script = "for p in /proc/[0-9]*; do [ ${p#/proc/} = 1 ] || [ ${p#/proc/} = $$ ] \
                  || cat $p/comm 2>/dev/null; done";
    common::run(b, id, script).await.1
}

/// [`others_in`] once it reads `wanted`, polling every 100 ms for at most
/// 30 s: what it read last.
async fn others_become(b: &LinuxBackend, id: &str, wanted: &str) -> String {
    let mut seen = String::new();
    for _ in 0..300 {
        seen = others_in(b, id).await;
        if seen == wanted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

/// A reader that takes one chunk and goes away: the writer in the sandbox
/// gets `SIGPIPE` or `EPIPE` instead of waiting for ever
/// on a full pipe, and nothing of it is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_dropped_after_one_chunk_ends_the_writer() {
    let Some((b, _dir)) = backend("a_reader_dropped_after_one_chunk_ends_the_writer") else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let StartedProcess {
        stdin,
        mut stdout,
        stderr,
        control,
    } = start(&b, &info.id, &["yes", "a line the reader never reads"]).await;
    let mut chunk = vec![0u8; 64 << 10];
    let n = tokio::time::timeout(BOUND, stdout.read(&mut chunk))
        .await
        .expect("a first chunk")
        .unwrap();
    assert!(n > 0);
    drop(stdout);
    let status = tokio::time::timeout(BOUND, control.wait())
        .await
        .expect("the writer ends once its reader is gone")
        .unwrap();
    // `SIGPIPE` where it is not ignored, else `EPIPE`, on which `yes`
    // exits 1.
    assert!(
        matches!(
            status,
            ExitStatus::Signal(SignalName::Sigpipe) | ExitStatus::Code(1)
        ),
        "{status:?}"
    );
    drop((stdin, stderr, control));
    assert_eq!(others_in(&b, &info.id).await, "", "nothing is left");
    b.destroy(&info.id).await.unwrap();
}

/// 4 MiB of bytes that are not all alike (so an order or a loss shows).
fn four_mib() -> Vec<u8> {
    (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

// Provider contract, `openProcess`: "`input` accepts ordered bytes **and a
// half-close**. The one-shot driver writes one prompt and closes; the
// child's completion depends on observing EOF."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_mib_of_stdin_fed_to_cat_come_back_whole() {
    let Some((b, _dir)) = backend("four_mib_of_stdin_fed_to_cat_come_back_whole") else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let input = four_mib();

    // A live process: the caller writes while it reads, then half-closes.
    let mut p = start(&b, &info.id, &["cat"]).await;
    let mut stdin = p.stdin;
    let fed = input.clone();
    let writer = tokio::spawn(async move {
        stdin.write_all(&fed).await.unwrap();
        stdin.shutdown().await.unwrap();
    });
    let mut echoed = Vec::new();
    tokio::time::timeout(BOUND, p.stdout.read_to_end(&mut echoed))
        .await
        .expect("cat ends once its stdin is closed")
        .unwrap();
    writer.await.unwrap();
    assert_eq!(echoed.len(), input.len());
    assert!(echoed == input, "a live process: the echo differs");
    assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));

    // An exec: the bytes of the request, written as the pipe takes them.
    let mut out = CollectedOutput::default();
    let outcome = tokio::time::timeout(
        BOUND,
        b.exec(
            &info.id,
            ExecRequest::new(Command::argv(["cat"]).unwrap()).stdin(input.clone()),
            &mut out,
        ),
    )
    .await
    .expect("the exec settles")
    .unwrap();
    assert_eq!(outcome.status, ExitStatus::Code(0));
    assert_eq!(out.stdout.len(), input.len());
    assert!(out.stdout == input, "an exec: the echo differs");
    b.destroy(&info.id).await.unwrap();
}

/// An exec whose command exits without reading the stdin it was given
/// settles with the command's own status: the closed pipe is its
/// business, not an error of the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_that_never_reads_its_stdin_settles_with_its_status() {
    let Some((b, _dir)) = backend("an_exec_that_never_reads_its_stdin_settles_with_its_status")
    else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let mut out = CollectedOutput::default();
    let outcome = tokio::time::timeout(
        BOUND,
        b.exec(
            &info.id,
            ExecRequest::new(Command::shell("echo unread; exit 3").unwrap()).stdin(four_mib()),
            &mut out,
        ),
    )
    .await
    .expect("the exec settles")
    .unwrap();
    assert_eq!(outcome.status, ExitStatus::Code(3));
    assert_eq!(out.stdout, b"unread\n");
    b.destroy(&info.id).await.unwrap();
}

/// A stream is read on the runtime's reactor, never by a thread of
/// tokio's blocking pool: on a runtime whose only blocking thread is held
/// busy, a process's output is still read to its end (a read that needed
/// the pool would wait for ever, and the bound fails the test).
#[test]
fn a_stream_read_needs_no_thread_of_the_blocking_pool() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    runtime.block_on(async {
        let Some((b, _dir)) = backend("a_stream_read_needs_no_thread_of_the_blocking_pool") else {
            return;
        };
        let info = b.create(CreateRequest::default()).await.unwrap();
        let mut p = start(&b, &info.id, &["seq", "-w", "0", "1048575"]).await;
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (busy, is_busy) = tokio::sync::oneshot::channel();
        let holder = tokio::task::spawn_blocking(move || {
            let _ = busy.send(());
            let _ = held.recv();
        });
        is_busy.await.expect("the pool's one thread is taken");
        let read = tokio::time::timeout(BOUND, digest(&mut p.stdout)).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        let (len, _) = read.expect("the stream is read while the pool is busy");
        assert_eq!(len, 8 << 20);
        assert_eq!(p.control.wait().await.unwrap(), ExitStatus::Code(0));
        b.destroy(&info.id).await.unwrap();
    });
}

/// An exec dropped half-way (its caller went away) closes its control
/// connection, and PID 1 then kills the command's whole group: nothing
/// of it is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_dropped_half_way_leaves_nothing_running() {
    let Some((b, _dir)) = backend("an_exec_dropped_half_way_leaves_nothing_running") else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let script = "touch /workspace/started; sleep 1000 & exec sleep 1000";
    let mut out = CollectedOutput::default();
    // Boxed, so that dropping it drops the exec itself.
    let mut exec = Box::pin(b.exec(
        &info.id,
        ExecRequest::new(Command::shell(script).unwrap()),
        &mut out,
    ));
    // Drop the exec once the command is running.
    let mut started = false;
    for _ in 0..600 {
        tokio::select! {
            settled = &mut exec => panic!("the exec settled: {settled:?}"),
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        let (code, _, _) = common::run(&b, &info.id, "test -e /workspace/started").await;
        if code == 0 {
            started = true;
            break;
        }
    }
    assert!(started, "the command started");
    drop(exec);
    let left = others_become(&b, &info.id, "").await;
    assert_eq!(left, "", "the dropped exec's group is gone");
    b.destroy(&info.id).await.unwrap();
}

/// A live process whose every handle is dropped while it runs (its pipes
/// unread, its exit not awaited) has its group killed by PID 1 once the
/// control connection closes: the watch for its exit holds nothing open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_process_dropped_while_it_runs_leaves_nothing_running() {
    let Some((b, _dir)) = backend("a_live_process_dropped_while_it_runs_leaves_nothing_running")
    else {
        return;
    };
    let info = b.create(CreateRequest::default()).await.unwrap();
    let p = start(&b, &info.id, &["sh", "-c", "sleep 1000 & exec sleep 1000"]).await;
    let running = others_become(&b, &info.id, "sleep\nsleep\n").await;
    assert_eq!(running, "sleep\nsleep\n", "the process runs");
    drop(p);
    let left = others_become(&b, &info.id, "").await;
    assert_eq!(left, "", "the dropped process's group is gone");
    b.destroy(&info.id).await.unwrap();
}
