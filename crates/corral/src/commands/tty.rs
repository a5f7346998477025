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
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Mutex;

use rustix::termios::{OptionalActions, Termios, Winsize, isatty, tcgetattr, tcgetwinsize};

use crate::error::CliError;

/// The size a terminal is given when the host's cannot be read.
const FALLBACK_SIZE: WindowSize = WindowSize { cols: 80, rows: 24 };

/// The mode stdin had before raw mode, while raw mode is on.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// A window size, in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// This process's stdin, known to be a terminal.
#[derive(Debug, Clone, Copy)]
pub struct HostTerminal(());

impl HostTerminal {
    /// Stdin as a terminal; `-t` without one is refused in one line, as
    /// `docker run -t` is ("the input device is not a TTY").
    pub fn stdin() -> Result<Self, CliError> {
        if isatty(stdin_fd()) {
            Ok(HostTerminal(()))
        } else {
            Err(CliError::usage(
                "-t: stdin is not a terminal (to pipe input into the command, use -i without -t)",
            ))
        }
    }

    /// The window's size now: stdin's, else stdout's, else 80x24. A
    /// terminal that reports 0 for a side gets the fallback for it.
    pub fn size(&self) -> WindowSize {
        let read = tcgetwinsize(stdin_fd()).or_else(|_| tcgetwinsize(io::stdout().as_fd()));
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
        let before = tcgetattr(stdin_fd()).map_err(|e| mode_error("reading", e))?;
        let mut raw = before.clone();
        raw.make_raw();
        *saved() = Some(before);
        if let Err(e) = rustix::termios::tcsetattr(stdin_fd(), OptionalActions::Now, &raw) {
            restore();
            return Err(mode_error("setting", e));
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
/// hook, which ends the process before [`RawMode`] could be dropped.
pub fn restore_after_panic() {
    restore();
}

/// Puts the saved mode back (once: later calls find nothing saved). A
/// terminal that is gone cannot be restored, and nothing is left to tell.
fn restore() {
    if let Some(before) = saved().take() {
        // `Drain`: the output already written is shown in the mode it was
        // written for before the line discipline changes back.
        let _ = rustix::termios::tcsetattr(stdin_fd(), OptionalActions::Drain, &before);
    }
}

/// The saved mode, also after a panic while it was held.
fn saved() -> std::sync::MutexGuard<'static, Option<Termios>> {
    SAVED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stdin_fd() -> BorrowedFd<'static> {
    rustix::stdio::stdin()
}

fn mode_error(doing: &str, e: rustix::io::Errno) -> CliError {
    CliError::failure(
        "io",
        format!(
            "{doing} the terminal's mode: {}",
            io::Error::from_raw_os_error(e.raw_os_error())
        ),
    )
}
