//! The pipes of a spawned process, as the host makes them: both ends
//! close-on-exec, the host's end non-blocking (an open file description of
//! its own: the process's end stays blocking), an output pipe enlarged to
//! [`OUTPUT_PIPE_BYTES`] where the host allows it, and the host's end put
//! on the runtime's reactor, so a read lands straight in the caller's
//! buffer and never waits on a thread of tokio's blocking pool.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use rustix::fs::OFlags;
use rustix::pipe::PipeFlags;
use rustix::thread::CapabilitySet;
use tokio::net::unix::pipe;

/// The capacity asked for an output pipe (stdout, stderr): each wake-up
/// of a reader of a fast writer then carries up to sixteen times the
/// kernel's default of 64 KiB.
pub const OUTPUT_PIPE_BYTES: usize = 1 << 20;

/// The capacity of an output pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPipeSize {
    /// The kernel's default (64 KiB).
    Default,
    /// [`OUTPUT_PIPE_BYTES`], where the host lets this process enlarge its
    /// pipes without using up a quota ([`may_enlarge`]); else the default.
    Large,
}

/// The host's read end of an output pipe, non-blocking.
#[derive(Debug)]
pub struct HostReader(OwnedFd);

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
    if size == OutputPipeSize::Large && may_enlarge() {
        // Refused (EPERM: over `/proc/sys/fs/pipe-max-size` or the
        // user's pipe quota) means the default size, which is correct,
        // only slower: not an error of the process.
        let _ = rustix::pipe::fcntl_setpipe_size(&read, OUTPUT_PIPE_BYTES);
    }
    Ok((HostReader(read), write))
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

/// Whether this process may enlarge its pipes without a quota: the kernel
/// counts an unprivileged user's pipe pages against
/// `/proc/sys/fs/pipe-user-pages-soft`, and once that is used up every
/// new pipe of that user (of any of its programs) gets two pages. So a
/// rootless backend keeps the default size; one holding
/// `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` (root) is not counted. Read once.
fn may_enlarge() -> bool {
    static PRIVILEGED: OnceLock<bool> = OnceLock::new();
    *PRIVILEGED.get_or_init(|| {
        rustix::thread::capabilities(None).is_ok_and(|caps| {
            caps.effective
                .intersects(CapabilitySet::SYS_RESOURCE | CapabilitySet::SYS_ADMIN)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn the_host_end_is_non_blocking_and_the_process_end_is_not() {
        let (host, process) = output(OutputPipeSize::Default).unwrap();
        assert!(
            rustix::fs::fcntl_getfl(&host.0)
                .unwrap()
                .contains(OFlags::NONBLOCK)
        );
        assert!(
            !rustix::fs::fcntl_getfl(&process)
                .unwrap()
                .contains(OFlags::NONBLOCK)
        );
        let (process, host) = input().unwrap();
        assert!(
            rustix::fs::fcntl_getfl(&host.0)
                .unwrap()
                .contains(OFlags::NONBLOCK)
        );
        assert!(
            !rustix::fs::fcntl_getfl(&process)
                .unwrap()
                .contains(OFlags::NONBLOCK)
        );
    }

    #[test]
    fn an_output_pipe_is_enlarged_only_where_this_process_may() {
        let (host, _process) = output(OutputPipeSize::Large).unwrap();
        let size = rustix::pipe::fcntl_getpipe_size(&host.0).unwrap();
        let default =
            rustix::pipe::fcntl_getpipe_size(&output(OutputPipeSize::Default).unwrap().0.0)
                .unwrap();
        if may_enlarge() {
            // Privileged, the kernel grants the size even over
            // `/proc/sys/fs/pipe-max-size`.
            assert_eq!(size, OUTPUT_PIPE_BYTES.max(default));
        } else {
            assert_eq!(size, default, "a rootless process keeps the default");
        }
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
