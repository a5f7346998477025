//! A pseudo-terminal the tests open themselves, to drive `corral run -it`
//! and `corral shell` as a person at a terminal does: keys typed into the
//! master side, what the screen shows read from it, the window resized on
//! it; corral gets the slave side as its stdio.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Termios, Winsize, tcgetattr, tcsetwinsize};

/// How long the screen may take to show what a test waits for, and
/// corral to exit once told to.
pub(crate) const WITHIN: Duration = Duration::from_secs(30);

/// A pseudo-terminal: the master side the test drives, the slave side
/// corral is given, and everything the master read so far.
pub(crate) struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of `screen` a wait already matched.
    seen: usize,
}

impl Pty {
    /// A new terminal of `cols` x `rows`.
    pub(crate) fn open(cols: u16, rows: u16) -> Pty {
        let master =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .expect("opening the slave side");
        let pty = Pty {
            master: std::fs::File::from(master),
            slave,
            screen: Arc::new(Mutex::new(Vec::new())),
            seen: 0,
        };
        pty.resize(cols, rows);
        // The reader ends when every slave descriptor closed (EIO): once
        // corral exited and this Pty is dropped.
        let mut reader = pty.master.try_clone().expect("dup master");
        let screen = Arc::clone(&pty.screen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                screen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        pty
    }

    /// The slave side, for one of corral's stdio streams.
    pub(crate) fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().expect("dup slave"))
    }

    /// The slave side's mode now.
    pub(crate) fn mode(&self) -> Termios {
        tcgetattr(&self.slave).expect("tcgetattr")
    }

    /// Sets the window size (the kernel does not signal corral, which is
    /// not in the terminal's session: the test sends `SIGWINCH` itself).
    pub(crate) fn resize(&self, cols: u16, rows: u16) {
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        tcsetwinsize(&self.master, size).expect("TIOCSWINSZ");
    }

    /// Types `keys`.
    pub(crate) fn type_keys(&mut self, keys: &[u8]) {
        self.master.write_all(keys).expect("typing");
    }

    /// Waits until the screen shows `text` after what earlier waits
    /// matched, at most `within`; whether it did.
    pub(crate) fn shows_within(&mut self, text: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            {
                let screen = self.screen.lock().unwrap();
                let fresh = &screen[self.seen..];
                if let Some(at) = fresh.windows(text.len()).position(|w| w == text.as_bytes()) {
                    self.seen += at + text.len();
                    return true;
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen shows `text`; fails the test with the
    /// screen's end when it does not within [`WITHIN`].
    pub(crate) fn expect(&mut self, text: &str) {
        if !self.shows_within(text, WITHIN) {
            panic!(
                "the terminal did not show {text:?} within {WITHIN:?}; its end: {:?}",
                self.tail()
            );
        }
    }

    /// How many times the screen showed `byte` so far.
    pub(crate) fn count(&self, byte: u8) -> usize {
        self.screen
            .lock()
            .unwrap()
            .iter()
            .filter(|b| **b == byte)
            .count()
    }

    /// The last part of what the screen showed.
    pub(crate) fn tail(&self) -> String {
        let screen = self.screen.lock().unwrap();
        let text = String::from_utf8_lossy(&screen).into_owned();
        let from = text.char_indices().rev().nth(600).map_or(0, |(i, _)| i);
        text[from..].to_string()
    }
}

/// Whether two modes are the same in every flag raw mode changes.
pub(crate) fn same_mode(a: &Termios, b: &Termios) -> bool {
    a.input_modes == b.input_modes
        && a.output_modes == b.output_modes
        && a.control_modes == b.control_modes
        && a.local_modes == b.local_modes
}

/// Waits for `child` at most [`WITHIN`]; past it, kills it and fails the
/// test naming `what`.
pub(crate) fn ends(child: &mut Child, what: &str) -> ExitStatus {
    let deadline = Instant::now() + WITHIN;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for corral") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: corral did not exit within {WITHIN:?}; it was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
