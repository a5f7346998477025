//! The pipes of a spawned process, as the host makes them: both ends
//! close-on-exec, the host's end non-blocking (an open file description of
//! its own: the process's end stays blocking), an output pipe enlarged to
//! [`OUTPUT_PIPE_BYTES`] where the host allows it, and the host's end put
//! on the runtime's reactor, so a read lands straight in the caller's
//! buffer and never waits on a thread of tokio's blocking pool.

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use rustix::fs::OFlags;
use rustix::pipe::PipeFlags;
use rustix::thread::CapabilitySet;
use tokio::net::unix::pipe;

/// The capacity asked for an output pipe (stdout, stderr): each wake-up
/// of a reader of a fast writer then carries up to sixteen times the
/// kernel's default of 64 KiB.
pub const OUTPUT_PIPE_BYTES: usize = 1 << 20;

/// How many enlarged pipes may be open at once in this process. The
/// kernel charges every pipe's pages to its user (root too, whose
/// capability only lifts the limit for root's own new pipes), and once a
/// user's pages pass `/proc/sys/fs/pipe-user-pages-soft` (16,384 by
/// default), each new pipe of that user's unprivileged processes (a
/// container's uid 0 without `CAP_SYS_RESOURCE`, say) gets two pages. So
/// enlarged pipes stay under a quarter of that default: 16 of 256 pages.
/// Beyond that, a pipe keeps the default size.
pub const MAX_LARGE_PIPES: usize = 16;

/// The capacity of an output pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPipeSize {
    /// The kernel's default (64 KiB).
    Default,
    /// [`OUTPUT_PIPE_BYTES`], where the host lets this process enlarge its
    /// pipes without using up a quota ([`may_enlarge`]); else the default.
    Large,
}

/// The host's read end of an output pipe, non-blocking, with its place
/// among the [`MAX_LARGE_PIPES`] when it was enlarged.
#[derive(Debug)]
pub struct HostReader(OwnedFd, Option<LargePlace>);

/// One of the [`MAX_LARGE_PIPES`] places, given back when dropped.
#[derive(Debug)]
pub struct LargePlace(());

/// Enlarged pipes open now in this process.
static LARGE_OPEN: AtomicUsize = AtomicUsize::new(0);

impl LargePlace {
    /// A place, when fewer than [`MAX_LARGE_PIPES`] are taken.
    fn take() -> Option<Self> {
        LARGE_OPEN
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_LARGE_PIPES).then_some(n + 1)
            })
            .ok()
            .map(|_| LargePlace(()))
    }
}

impl Drop for LargePlace {
    fn drop(&mut self) {
        LARGE_OPEN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An output pipe's host end on the reactor, holding its place among the
/// enlarged pipes for as long as it is open.
#[derive(Debug)]
pub struct OutputReader {
    receiver: pipe::Receiver,
    _place: Option<LargePlace>,
}

impl tokio::io::AsyncRead for OutputReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().receiver).poll_read(cx, buf)
    }
}

/// The host's write end of an input pipe, non-blocking.
#[derive(Debug)]
pub struct HostWriter(OwnedFd);

impl HostReader {
    /// The end as a reader on the current runtime's reactor (call it
    /// where a runtime is entered: an async task, or a blocking task of
    /// the runtime).
    pub fn into_receiver(self) -> io::Result<pipe::Receiver> {
        // The end is a pipe and was made non-blocking in `output`.
        pipe::Receiver::from_owned_fd_unchecked(self.0)
    }

    /// [`Self::into_receiver`], keeping the pipe's place among the
    /// enlarged ones until the reader is dropped.
    pub fn into_reader(self) -> io::Result<OutputReader> {
        Ok(OutputReader {
            receiver: pipe::Receiver::from_owned_fd_unchecked(self.0)?,
            _place: self.1,
        })
    }
}

impl HostWriter {
    /// The end as a writer on the current runtime's reactor (as
    /// [`HostReader::into_receiver`]).
    pub fn into_sender(self) -> io::Result<pipe::Sender> {
        // The end is a pipe and was made non-blocking in `input`.
        pipe::Sender::from_owned_fd_unchecked(self.0)
    }
}

/// An output pipe of `size`: the host's read end, and the write end the
/// process gets.
pub fn output(size: OutputPipeSize) -> io::Result<(HostReader, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    non_blocking(&read)?;
    let mut place = None;
    if size == OutputPipeSize::Large && may_enlarge() {
        // Refused (EPERM: over `/proc/sys/fs/pipe-max-size` or the
        // user's pipe quota) means the default size, which is correct,
        // only slower: not an error of the process.
        place = LargePlace::take()
            .filter(|_| rustix::pipe::fcntl_setpipe_size(&read, OUTPUT_PIPE_BYTES).is_ok());
    }
    Ok((HostReader(read, place), write))
}

/// An input pipe: the read end the process gets, and the host's write end.
pub fn input() -> io::Result<(OwnedFd, HostWriter)> {
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    non_blocking(&write)?;
    Ok((read, HostWriter(write)))
}

/// Sets `O_NONBLOCK` on a fresh pipe end (whose other status flags are
/// all clear, so nothing is lost by setting the flags whole).
fn non_blocking(end: &OwnedFd) -> io::Result<()> {
    rustix::fs::fcntl_setfl(end, OFlags::NONBLOCK)?;
    Ok(())
}

/// Whether this process may enlarge its pipes without being held to a
/// quota: the kernel lifts `/proc/sys/fs/pipe-user-pages-soft` only for a
/// process with `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` in the host's own
/// user namespace. So a rootless backend, or one in a user namespace of
/// its own (an unprivileged container, whose capabilities the kernel does
/// not count here), keeps the default size: its enlarged pipes would use
/// up the quota that makes every later pipe of its user two pages. Read
/// once.
fn may_enlarge() -> bool {
    static PRIVILEGED: OnceLock<bool> = OnceLock::new();
    *PRIVILEGED.get_or_init(|| {
        let capable = rustix::thread::capabilities(None).is_ok_and(|caps| {
            caps.effective
                .intersects(CapabilitySet::SYS_RESOURCE | CapabilitySet::SYS_ADMIN)
        });
        capable && in_host_user_namespace()
    })
}

/// Whether this process's user namespace is the host's: its uid map is
/// the identity over every id.
fn in_host_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|map| map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn non_blocking(end: &OwnedFd) -> bool {
        rustix::fs::fcntl_getfl(end)
            .unwrap()
            .contains(OFlags::NONBLOCK)
    }

    #[test]
    fn the_host_end_is_non_blocking_and_the_process_end_is_not() {
        let (host, process) = output(OutputPipeSize::Default).unwrap();
        assert!(non_blocking(&host.0), "output: the host's end");
        assert!(!non_blocking(&process), "output: the process's end");
        let (process, host) = input().unwrap();
        assert!(non_blocking(&host.0), "input: the host's end");
        assert!(!non_blocking(&process), "input: the process's end");
    }

    #[test]
    fn an_output_pipe_is_enlarged_only_where_this_process_may() {
        let (host, _process) = output(OutputPipeSize::Large).unwrap();
        let size = rustix::pipe::fcntl_getpipe_size(&host.0).unwrap();
        let default =
            rustix::pipe::fcntl_getpipe_size(&output(OutputPipeSize::Default).unwrap().0.0)
                .unwrap();
        if !may_enlarge() {
            assert!(host.1.is_none(), "no place is taken where none may be");
        }
        match host.1 {
            // Privileged, the kernel grants the size even over
            // `/proc/sys/fs/pipe-max-size`.
            Some(_) => assert_eq!(size, OUTPUT_PIPE_BYTES.max(default)),
            // Rootless, or every place taken by other pipes meanwhile.
            None => assert_eq!(size, default, "a pipe without a place keeps the default"),
        }
    }

    /// Attack: a caller opening many live processes at once, each with
    /// two output pipes, to pin the host user's pipe quota → at most
    /// [`MAX_LARGE_PIPES`] are enlarged at once, the rest keep the
    /// default, and a place given back serves the next pipe.
    #[test]
    fn at_most_max_large_pipes_are_enlarged_at_once() {
        let mut held = Vec::new();
        while let Some(place) = LargePlace::take() {
            held.push(place);
            assert!(held.len() <= MAX_LARGE_PIPES, "places beyond the bound");
        }
        assert!(LargePlace::take().is_none(), "every place is taken");
        let default =
            rustix::pipe::fcntl_getpipe_size(&output(OutputPipeSize::Default).unwrap().0.0)
                .unwrap();
        let (host, _process) = output(OutputPipeSize::Large).unwrap();
        let size = rustix::pipe::fcntl_getpipe_size(&host.0).unwrap();
        // Another test's pipe may give its place back meanwhile.
        match host.1 {
            Some(_) => assert_eq!(size, OUTPUT_PIPE_BYTES.max(default)),
            None => assert_eq!(size, default),
        }
        drop(host);
        held.pop();
        let again = LargePlace::take();
        assert!(again.is_some(), "a place given back is taken again");
    }

    #[tokio::test]
    async fn bytes_cross_both_directions_on_the_reactor() {
        let (out_host, out_process) = output(OutputPipeSize::Large).unwrap();
        let (in_process, in_host) = input().unwrap();
        let mut rx = out_host.into_receiver().unwrap();
        let mut tx = in_host.into_sender().unwrap();
        tx.write_all(b"in").await.unwrap();
        drop(tx);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(in_process), &mut got).unwrap();
        assert_eq!(got, b"in");
        rustix::io::write(&out_process, b"out").unwrap();
        drop(out_process);
        let mut got = Vec::new();
        rx.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"out");
    }
}
