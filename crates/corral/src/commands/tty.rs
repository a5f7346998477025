//! The host's terminal while corral is attached to a sandbox's terminal
//! (`corral run -it`, `corral shell`): whether stdin is one, its window
//! size, and raw mode, which is undone on every way out.
//!
//! Raw mode hands every keystroke to the sandbox unchanged: Ctrl-C is the
//! byte 0x03 for the workload's terminal to turn into its `SIGINT`, not a
//! signal to corral. The mode before it is restored by [`RawMode`]'s drop
//! (a normal return, an error, an ending signal, all of which return
//! through it) and by [`restore_after_panic`], which the panic hook calls
//! because the hook exits the process before anything unwinds.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use rustix::termios::{OptionalActions, Termios, Winsize, isatty, tcgetattr, tcgetwinsize};

use crate::error::CliError;

/// The size a terminal is given when the host's cannot be read.
const FALLBACK_SIZE: WindowSize = WindowSize { cols: 80, rows: 24 };

/// The terminal in raw mode and the mode it had before, while raw mode
/// is on.
static SAVED: Mutex<Option<Saved>> = Mutex::new(None);

/// What [`restore`] puts back.
struct Saved {
    /// The terminal (a descriptor of its own, so restoring needs nothing else).
    terminal: OwnedFd,
    /// Its mode before raw mode.
    before: Termios,
}

/// A window size, in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// A terminal of this process (stdin), known to be one.
#[derive(Debug, Clone, Copy)]
pub struct HostTerminal {
    fd: BorrowedFd<'static>,
}

impl HostTerminal {
    /// Stdin as a terminal; `-t` without one is refused in one line, as
    /// `docker run -t` is ("the input device is not a TTY").
    pub fn stdin() -> Result<Self, CliError> {
        let fd = rustix::stdio::stdin();
        if isatty(fd) {
            Ok(HostTerminal { fd })
        } else {
            Err(CliError::usage(
                "-t: stdin is not a terminal (to pipe input into the command, use -i without -t)",
            ))
        }
    }

    /// The window's size now: stdin's, else stdout's, else 80x24. A
    /// terminal that reports 0 for a side gets the fallback for it.
    pub fn size(&self) -> WindowSize {
        let read = tcgetwinsize(self.fd).or_else(|_| tcgetwinsize(io::stdout().as_fd()));
        match read {
            Ok(Winsize { ws_col, ws_row, .. }) => WindowSize {
                cols: if ws_col == 0 {
                    FALLBACK_SIZE.cols
                } else {
                    ws_col
                },
                rows: if ws_row == 0 {
                    FALLBACK_SIZE.rows
                } else {
                    ws_row
                },
            },
            Err(_) => FALLBACK_SIZE,
        }
    }

    /// Puts the terminal in raw mode until the guard is dropped.
    pub fn raw(&self) -> Result<RawMode, CliError> {
        let before = tcgetattr(self.fd).map_err(|e| mode_error("reading", e.into()))?;
        let terminal = self
            .fd
            .try_clone_to_owned()
            .map_err(|e| mode_error("keeping", e))?;
        let mut raw = before.clone();
        raw.make_raw();
        *saved() = Some(Saved { terminal, before });
        if let Err(e) = rustix::termios::tcsetattr(self.fd, OptionalActions::Now, &raw) {
            restore();
            return Err(mode_error("setting", e.into()));
        }
        Ok(RawMode(()))
    }
}

/// Raw mode on the host terminal; dropping it restores the mode before.
#[derive(Debug)]
pub struct RawMode(());

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the host terminal's mode if raw mode is on: for the panic
/// hook, which ends the process before [`RawMode`] could be dropped. It
/// never waits: a panic while the saved mode is being changed (on this
/// thread or another) leaves it to that change.
pub fn restore_after_panic() {
    let taken = match SAVED.try_lock() {
        Ok(mut saved) => saved.take(),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    put_back(taken);
}

/// Puts the saved mode back (once: later calls find nothing saved).
fn restore() {
    put_back(saved().take());
}

/// Restores `saved`, if there is one. A terminal that is gone cannot be
/// restored, and nothing is left to tell.
fn put_back(saved: Option<Saved>) {
    if let Some(Saved { terminal, before }) = saved {
        // `Now`, not `Drain`: a terminal nobody reads (a stopped pager, a
        // pty whose master is gone) would make draining wait forever.
        let _ = rustix::termios::tcsetattr(&terminal, OptionalActions::Now, &before);
    }
}

/// The saved mode, also after a panic while it was held.
fn saved() -> std::sync::MutexGuard<'static, Option<Saved>> {
    SAVED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn mode_error(doing: &str, e: io::Error) -> CliError {
    CliError::failure("io", format!("{doing} the terminal's mode: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags};
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

    /// The slave side of a new pseudo-terminal, kept open for the test
    /// process's life, with its master.
    fn terminal() -> (OwnedFd, BorrowedFd<'static>) {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY,
            Mode::empty(),
        )
        .unwrap();
        let slave: &'static OwnedFd = Box::leak(Box::new(slave));
        (master, slave.as_fd())
    }

    fn modes(fd: BorrowedFd<'_>) -> [u32; 4] {
        let t = tcgetattr(fd).unwrap();
        [
            t.input_modes.bits(),
            t.output_modes.bits(),
            t.control_modes.bits(),
            t.local_modes.bits(),
        ]
    }

    /// Both ways out restore the mode: the guard's drop (every return)
    /// and the panic hook's call, which comes before the process exits
    /// without unwinding; the guard dropped after the hook restored is a
    /// no-op. (One test: the saved mode is the process's.)
    #[test]
    fn raw_mode_is_undone_by_the_guard_and_by_the_panic_hook() {
        let (_master, fd) = terminal();
        let host = HostTerminal { fd };
        let before = modes(fd);

        let raw = host.raw().unwrap();
        assert_ne!(modes(fd), before, "raw mode is on");
        drop(raw);
        assert_eq!(modes(fd), before, "the guard's drop restores");

        let raw = host.raw().unwrap();
        assert_ne!(modes(fd), before, "raw mode is on again");
        restore_after_panic();
        assert_eq!(modes(fd), before, "the panic hook's call restores");
        drop(raw);
        assert_eq!(modes(fd), before, "and the guard changes nothing after it");
    }
}
