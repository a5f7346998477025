//! The link to a started init ([`InitLink`]): the one handle the host
//! needs to speak to an init before its commit, over its startup socket.

use std::fs::File;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Child;

/// The link to a started init, from its start until its commit: the init
/// (the outer `corral-init`, a child of this process), the startup socket
/// to it, and what it is handed with its go-ahead. Dropping it closes the
/// startup socket, on which the init exits by itself.
#[derive(Debug)]
pub struct InitLink {
    child: Child,
    startup: UnixStream,
    control: Option<UnixListener>,
    root: Option<File>,
}

impl InitLink {
    /// The link to `child`, spoken to over `startup`.
    pub fn new(child: Child, startup: UnixStream) -> Self {
        InitLink {
            child,
            startup,
            control: None,
            root: None,
        }
    }

    /// The init's host pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The startup socket.
    pub fn startup(&self) -> &UnixStream {
        &self.startup
    }

    /// Whether the init still waits (it has not exited).
    pub fn waiting(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Keeps PID 1's control `listener`, to hand over with the go-ahead.
    pub fn keep_control(&mut self, listener: UnixListener) {
        self.control = Some(listener);
    }

    /// Keeps the sandbox's `root` directory (as finally mounted), to hand
    /// over with the go-ahead (with a user namespace, the init cannot
    /// reach it through the state directory).
    pub fn keep_root(&mut self, root: File) {
        self.root = Some(root);
    }

    /// What is kept to hand over: the control listener and the root.
    pub fn kept(&self) -> (Option<&UnixListener>, Option<&File>) {
        (self.control.as_ref(), self.root.as_ref())
    }

    /// Closes the control listener once handed over (PID 1 holds its own
    /// copy).
    pub fn close_control(&mut self) {
        self.control = None;
    }

    /// Stops the init: closes its startup socket, kills it and reaps it.
    pub fn stop(self) {
        let (mut child, startup) = self.into_parts();
        drop(startup);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The init and its startup socket, for a reaper that keeps the socket
    /// open until the init exits.
    pub fn into_parts(self) -> (Child, UnixStream) {
        (self.child, self.startup)
    }
}
