//! PID 1's loop: one thread, `poll` over the control listener, the
//! `SIGCHLD` signalfd and every control connection.
//!
//! - A connection carries at most one spawned process. Its `Exited` reply
//!   is sent only once the leader is reaped *and* nothing of its process
//!   group is left (the rest of the group is killed when the leader exits).
//! - A connection that closes kills its process's group.
//! - Every zombie is reaped, whoever its parent was.
//! - `Shutdown` kills every process of the namespace and exits.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use super::child::{SpawnSpec, spawn};
use super::sys::drain_signalfd;
use crate::protocol::{self, Reply, Request};

/// How often pending group deaths are re-checked while waiting.
const RECHECK: Duration = Duration::from_millis(20);

struct Conn {
    sock: OwnedFd,
    buf: Vec<u8>,
    fds: Vec<OwnedFd>,
    /// The spawned leader, while it or its group lives.
    leader: Option<i32>,
    open: bool,
}

/// A leader that exited while members of its group may still run.
struct Ending {
    conn: u64,
    status: WaitStatus,
}

/// The state of PID 1.
pub struct Pid1 {
    listener: OwnedFd,
    sigfd: OwnedFd,
    conns: BTreeMap<u64, Conn>,
    next: u64,
    /// Leader pid → connection id, while the leader runs.
    running: BTreeMap<i32, u64>,
    /// Leader pid (= pgid) → its exit, while its group dies.
    ending: BTreeMap<i32, Ending>,
    /// The end of the sandbox's lifetime, when it has one.
    deadline: Option<Instant>,
}

impl Pid1 {
    /// PID 1 serving `listener`, with `SIGCHLD` arriving on `sigfd`.
    pub fn new(listener: OwnedFd, sigfd: OwnedFd, deadline: Option<Instant>) -> Self {
        Pid1 {
            listener,
            sigfd,
            conns: BTreeMap::new(),
            next: 0,
            running: BTreeMap::new(),
            ending: BTreeMap::new(),
            deadline,
        }
    }

    /// Serves until `Shutdown` or the end of the lifetime; returns the exit code.
    pub fn run(mut self) -> i32 {
        loop {
            let left = self
                .deadline
                .map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                kill_everything();
                return 0;
            }
            let ids: Vec<u64> = self
                .conns
                .iter()
                .filter(|(_, c)| c.open)
                .map(|(id, _)| *id)
                .collect();
            let (l_ready, s_ready, ready) = {
                let mut fds = vec![
                    PollFd::new(&self.listener, PollFlags::IN),
                    PollFd::new(&self.sigfd, PollFlags::IN),
                ];
                for id in &ids {
                    fds.push(PollFd::new(&self.conns[id].sock, PollFlags::IN));
                }
                let wait = match (self.ending.is_empty(), left) {
                    (true, None) => None,
                    (true, Some(l)) => Some(l),
                    (false, None) => Some(RECHECK),
                    (false, Some(l)) => Some(l.min(RECHECK)),
                };
                let timeout = wait.map(|w| rustix::event::Timespec {
                    tv_sec: w.as_secs() as _,
                    tv_nsec: w.subsec_nanos() as _,
                });
                match poll(&mut fds, timeout.as_ref()) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return 1,
                }
                let r: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
                (r[0], r[1], r[2..].to_vec())
            };
            if s_ready {
                drain_signalfd(&self.sigfd);
            }
            self.reap();
            if l_ready {
                self.accept();
            }
            for (id, is_ready) in ids.into_iter().zip(ready) {
                if is_ready && let Some(code) = self.serve_conn(id) {
                    return code;
                }
            }
            self.reap();
            self.settle();
        }
    }

    fn accept(&mut self) {
        if let Ok(sock) =
            rustix::net::accept_with(&self.listener, rustix::net::SocketFlags::CLOEXEC)
        {
            self.next += 1;
            self.conns.insert(
                self.next,
                Conn {
                    sock,
                    buf: Vec::new(),
                    fds: Vec::new(),
                    leader: None,
                    open: true,
                },
            );
        }
    }

    /// Reads from connection `id` and handles whole frames. `Some(code)` = exit now.
    fn serve_conn(&mut self, id: u64) -> Option<i32> {
        let conn = self.conns.get_mut(&id)?;
        let n = protocol::recv_with_fds(conn.sock.as_fd(), &mut conn.buf, &mut conn.fds);
        if !matches!(n, Ok(n) if n > 0) {
            self.close(id);
            return None;
        }
        loop {
            let conn = self.conns.get_mut(&id)?;
            let frame = match protocol::decode::<Request>(&conn.buf) {
                Ok(Some((req, used))) => {
                    conn.buf.drain(..used);
                    req
                }
                Ok(None) => return None,
                Err(_) => {
                    self.close(id);
                    return None;
                }
            };
            match frame {
                Request::Shutdown => {
                    kill_everything();
                    return Some(0);
                }
                Request::Signal { signal, group } => {
                    if let Some(pid) = conn.leader {
                        send_signal(pid, signal, group);
                    }
                }
                Request::Spawn {
                    argv,
                    env,
                    cwd,
                    stdin,
                    tty,
                    user,
                } => {
                    let fds = std::mem::take(&mut conn.fds);
                    let mut master = None;
                    let terminal = if tty {
                        match open_terminal() {
                            Ok((m, slave)) => {
                                master = Some(m);
                                Ok(Some(slave))
                            }
                            Err(e) => Err(e),
                        }
                    } else {
                        Ok(None)
                    };
                    let reply = if conn.leader.is_some() {
                        Reply::SpawnFailed {
                            failure: protocol::SpawnFailure::BadRequest,
                            errno: 0,
                        }
                    } else if let Err(e) = &terminal {
                        Reply::SpawnFailed {
                            failure: protocol::SpawnFailure::System,
                            errno: e.raw_os_error(),
                        }
                    } else {
                        let spec = SpawnSpec {
                            argv: &argv,
                            env: &env,
                            cwd: &cwd,
                            fds,
                            stdin,
                            tty: terminal.ok().flatten(),
                            user,
                        };
                        match spawn(spec) {
                            Ok(pid) => {
                                conn.leader = Some(pid);
                                self.running.insert(pid, id);
                                Reply::Spawned { pid: pid as u32 }
                            }
                            Err((failure, errno)) => Reply::SpawnFailed { failure, errno },
                        }
                    };
                    match (&reply, master) {
                        (Reply::Spawned { .. }, Some(m)) => self.reply_with(id, &reply, &[m]),
                        _ => self.reply(id, &reply),
                    }
                }
            }
        }
    }

    /// Replies with descriptors attached (a terminal's master side).
    fn reply_with(&mut self, id: u64, reply: &Reply, fds: &[OwnedFd]) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        if conn.open
            && protocol::send_with_fds(conn.sock.as_fd(), reply, &protocol::borrow_all(fds))
                .is_err()
        {
            self.close(id);
        }
    }

    fn reply(&mut self, id: u64, reply: &Reply) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if !conn.open {
            return;
        }
        let sent = protocol::encode(reply).and_then(|frame| {
            let mut rest = &frame[..];
            while !rest.is_empty() {
                let n = rustix::net::send(&conn.sock, rest, rustix::net::SendFlags::NOSIGNAL)?;
                rest = &rest[n..];
            }
            Ok(())
        });
        if sent.is_err() {
            self.close(id);
        }
    }

    /// The host hung up: its process group dies.
    fn close(&mut self, id: u64) {
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.open = false;
            conn.fds.clear();
            if let Some(pid) = conn.leader {
                send_signal(pid, libc::SIGKILL, true);
            } else {
                self.conns.remove(&id);
            }
        }
    }

    /// Reaps every zombie; an exited leader's group is killed.
    fn reap(&mut self) {
        while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
            let pid = pid.as_raw_nonzero().get();
            if let Some(conn) = self.running.remove(&pid) {
                send_signal(pid, libc::SIGKILL, true);
                self.ending.insert(pid, Ending { conn, status });
            }
        }
    }

    /// Reports exits whose process group is gone.
    fn settle(&mut self) {
        let gone: Vec<i32> = self
            .ending
            .keys()
            .copied()
            .filter(|pgid| !group_alive(*pgid))
            .collect();
        for pgid in gone {
            let Some(ending) = self.ending.remove(&pgid) else {
                continue;
            };
            let reply = Reply::Exited {
                code: ending.status.exit_status(),
                signal: ending.status.terminating_signal(),
            };
            self.reply(ending.conn, &reply);
            if let Some(conn) = self.conns.get_mut(&ending.conn) {
                conn.leader = None;
                if !conn.open {
                    self.conns.remove(&ending.conn);
                }
            }
        }
    }
}

/// Opens a new terminal on the sandbox's own `devpts`: (master, slave).
fn open_terminal() -> rustix::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pty::{OpenptFlags, ioctl_tiocgptpeer, openpt, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    unlockpt(&master)?;
    let slave = ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
    rustix::io::fcntl_setfd(&slave, rustix::io::FdFlags::CLOEXEC)?;
    Ok((master, slave))
}

fn group_alive(pgid: i32) -> bool {
    Pid::from_raw(pgid).is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

fn send_signal(pid: i32, signal: i32, group: bool) {
    let (Some(p), Some(s)) = (Pid::from_raw(pid), Signal::from_named_raw(signal)) else {
        return;
    };
    let _ = if group {
        rustix::process::kill_process_group(p, s)
    } else {
        rustix::process::kill_process(p, s)
    };
}

/// Kills every process of the pid namespace but PID 1.
fn kill_everything() {
    super::sys::kill_every_other_process();
}
