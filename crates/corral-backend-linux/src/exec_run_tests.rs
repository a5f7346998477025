use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use super::*;
use crate::pipes::{self, OutputPipeSize};

#[test]
fn each_raw_event_maps_onto_the_run_event_the_settle_machine_expects() {
    let exited = Reply::Exited {
        code: Some(3),
        signal: None,
    };
    let killed = Reply::Exited {
        code: None,
        signal: Some(9),
    };
    let other = Reply::Spawned { pid: 7 };
    let rows: [(Option<Event>, RunEvent<Exit>); 8] = [
        (
            Some(Event::Out(StreamKind::Stdout, b"out".to_vec())),
            RunEvent::Output(StreamKind::Stdout, b"out".to_vec()),
        ),
        (
            Some(Event::Out(StreamKind::Stderr, b"err".to_vec())),
            RunEvent::Output(StreamKind::Stderr, b"err".to_vec()),
        ),
        (Some(Event::Eof), RunEvent::Closed),
        (
            Some(Event::Control(Some(exited))),
            RunEvent::Exited(Exit {
                code: Some(3),
                signal: None,
            }),
        ),
        (
            Some(Event::Control(Some(killed))),
            RunEvent::Exited(Exit {
                code: None,
                signal: Some(9),
            }),
        ),
        (Some(Event::Control(Some(other))), RunEvent::Lost),
        (Some(Event::Control(None)), RunEvent::Lost),
        (None, RunEvent::Exhausted),
    ];
    for (event, want) in rows {
        let case = format!("{event:?}");
        assert_eq!(run_event(event), want, "{case}");
    }
}

/// A run over real pipes and a socket pair, and the command's side of
/// them: its stdout, its stderr, PID 1's end of the control connection,
/// and (when `stdin` is given) its stdin.
struct Bench {
    run: LinuxRun,
    stdout: OwnedFd,
    stderr: OwnedFd,
    pid1: UnixStream,
    stdin: Option<OwnedFd>,
}

fn bench(stdin: Option<Vec<u8>>) -> Bench {
    let (out_host, stdout) = pipes::output(OutputPipeSize::Default).unwrap();
    let (err_host, stderr) = pipes::output(OutputPipeSize::Default).unwrap();
    let (ours, pid1) = UnixStream::pair().unwrap();
    let (feed, stdin) = match stdin {
        Some(bytes) => {
            let (process, host) = pipes::input().unwrap();
            (
                Some(StdinFeed::new(host.into_sender().unwrap(), bytes)),
                Some(process),
            )
        }
        None => (None, None),
    };
    let sources = Sources {
        stdout: Some(out_host.into_receiver().unwrap()),
        stderr: Some(err_host.into_receiver().unwrap()),
        control: Some(ControlReader::new(ours.try_clone().unwrap()).unwrap()),
        stdin: feed,
    };
    Bench {
        run: LinuxRun::new(sources, ours),
        stdout,
        stderr,
        pid1,
        stdin,
    }
}

#[tokio::test]
async fn a_run_yields_each_source_then_exhausted_and_kills_by_one_group_frame() {
    let Bench {
        mut run,
        stdout,
        stderr,
        mut pid1,
        ..
    } = bench(None);
    rustix::io::write(&stdout, b"a").unwrap();
    assert_eq!(
        run.next().await,
        RunEvent::Output(StreamKind::Stdout, b"a".to_vec())
    );
    rustix::io::write(&stderr, b"b").unwrap();
    assert_eq!(
        run.next().await,
        RunEvent::Output(StreamKind::Stderr, b"b".to_vec())
    );
    drop(stdout);
    assert_eq!(run.next().await, RunEvent::Closed);
    drop(stderr);
    assert_eq!(run.next().await, RunEvent::Closed);
    let exited = Reply::Exited {
        code: Some(0),
        signal: None,
    };
    protocol::write_frame(&mut pid1, &exited).unwrap();
    assert_eq!(
        run.next().await,
        RunEvent::Exited(Exit {
            code: Some(0),
            signal: None
        })
    );
    run.kill().expect("the kill is asked");
    let frame = protocol::read_frame::<Request>(&mut pid1)
        .expect("a frame is read")
        .expect("a frame was written");
    assert!(
        matches!(
            frame,
            Request::Signal {
                signal: libc::SIGKILL,
                group: true
            }
        ),
        "{frame:?}"
    );
    drop(pid1);
    assert_eq!(run.next().await, RunEvent::Lost, "the connection ended");
    assert_eq!(run.next().await, RunEvent::Exhausted);
    assert_eq!(run.next().await, RunEvent::Exhausted, "and stays so");
}

#[test]
fn a_kill_on_a_connection_pid_1_left_is_not_an_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let _entered = rt.enter();
    let Bench { mut run, pid1, .. } = bench(None);
    drop(pid1);
    run.kill()
        .expect("the end of the connection confirms the kill");
}

/// A command that echoes its stdin: the host writes 4 MiB while it reads
/// the echo, so neither side waits on the other for ever, and the command
/// sees the end of its stdin once every byte is written.
#[tokio::test]
async fn stdin_is_fed_while_the_output_is_read_then_closed() {
    let input: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    let Bench {
        mut run,
        stdout,
        stderr,
        pid1,
        stdin,
    } = bench(Some(input.clone()));
    let command = std::thread::spawn(move || {
        let mut stdin = std::fs::File::from(stdin.unwrap());
        let mut stdout = std::fs::File::from(stdout);
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let n = stdin.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            stdout.write_all(&buf[..n]).unwrap();
        }
        drop((stdout, stderr, pid1));
    });
    let mut echoed = Vec::new();
    let mut closed = 0;
    loop {
        match run.next().await {
            RunEvent::Output(StreamKind::Stdout, bytes) => echoed.extend(bytes),
            RunEvent::Closed => closed += 1,
            RunEvent::Lost => {}
            RunEvent::Exhausted => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    command.join().unwrap();
    assert_eq!(closed, 2);
    assert_eq!(echoed.len(), input.len());
    assert!(echoed == input, "the echo differs from the input");
}

/// A command that closes its stdin unread: the write's EPIPE ends the
/// feed, and the run goes on to the command's exit.
#[tokio::test]
async fn a_command_that_never_reads_its_stdin_still_settles() {
    let Bench {
        mut run,
        stdout,
        stderr,
        mut pid1,
        stdin,
    } = bench(Some(vec![7u8; 1 << 20]));
    drop(stdin);
    drop((stdout, stderr));
    let exited = Reply::Exited {
        code: Some(0),
        signal: None,
    };
    protocol::write_frame(&mut pid1, &exited).unwrap();
    // PID 1 hangs up after the exit.
    drop(pid1);
    let mut seen = Vec::new();
    loop {
        match run.next().await {
            RunEvent::Exhausted => break,
            event => seen.push(event),
        }
    }
    let exit = RunEvent::Exited(Exit {
        code: Some(0),
        signal: None,
    });
    for want in [RunEvent::Closed, exit, RunEvent::Lost] {
        assert!(seen.contains(&want), "{want:?} in {seen:?}");
    }
}
