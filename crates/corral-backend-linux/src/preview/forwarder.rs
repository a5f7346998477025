//! The forwarder process of one sandbox (`corral-init --preview-forwarder`).
//!
//! It inherits one listening TCP socket per published port, bound on the
//! host's loopback by the backend (descriptors [`FIRST_FD`], `FIRST_FD + 1`,
//! … in the order of the ports on its command line), then moves its own
//! network namespace into the sandbox's. A socket keeps the namespace it
//! was made in, so the listeners still accept host connections while every
//! socket the forwarder opens from then on — the connection to the
//! sandbox's `127.0.0.1:PORT` — is inside the sandbox. Nothing is routed:
//! the sandbox gains no address and no way out.
//!
//! It lives exactly as long as the sandbox's PID 1: it watches a pidfd of
//! that process and exits when it does (and `destroy` and `gc` kill it by
//! its recorded pid and start time, or by its command line).

use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, PidfdFlags, pidfd_open};

use super::{FORWARDER_FLAG, MAX_PORTS};
use crate::state::process_start;

/// The descriptor number of the first inherited listener.
pub const FIRST_FD: i32 = 3;
/// Connections relayed at once; more wait in the listener's backlog.
const MAX_CONNECTIONS: usize = 256;
/// How long a connection into the sandbox may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the forwarder is told on its command line.
struct Args {
    init_pid: u32,
    init_start: u64,
    ports: Vec<u16>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    // argv: NAME FLAG <sandbox dir> <init pid> <init start> <port>…
    if args.get(1).map(String::as_str) != Some(FORWARDER_FLAG) || args.len() < 6 {
        return Err("run by the linux backend only (malformed arguments)".into());
    }
    let num = |i: usize, what: &str| -> Result<u64, String> {
        args[i]
            .parse()
            .map_err(|_| format!("{what} {:?} is not a number", args[i]))
    };
    let init_pid = u32::try_from(num(3, "init pid")?).map_err(|_| "init pid out of range")?;
    let init_start = num(4, "init start time")?;
    let ports = args[5..]
        .iter()
        .map(|p| {
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("port {p:?} is not a port"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ports.len() > MAX_PORTS {
        return Err(format!("more than {MAX_PORTS} ports"));
    }
    Ok(Args {
        init_pid,
        init_start,
        ports,
    })
}

/// Takes the listener inherited on descriptor `fd`.
fn inherited_listener(fd: i32) -> Result<TcpListener, String> {
    let owned = crate::sys::inherited::adopt_inherited_descriptor(fd)
        .ok_or_else(|| format!("descriptor {fd} was not inherited"))?;
    let stat = rustix::fs::fstat(&owned).map_err(|e| format!("descriptor {fd}: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
        return Err(format!("descriptor {fd} is not a socket"));
    }
    rustix::io::fcntl_setfd(&owned, rustix::io::FdFlags::CLOEXEC)
        .map_err(|e| format!("descriptor {fd}: {e}"))?;
    let listener = TcpListener::from(owned);
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("descriptor {fd}: {e}"))?;
    Ok(listener)
}

/// The forwarder's `main`: returns the process exit code. The first line
/// on stdout is `ready` once it serves, or the reason it cannot.
pub fn main(args: &[String]) -> i32 {
    let served = setup(args);
    let mut stdout = std::io::stdout();
    match served {
        Ok((pidfd, listeners)) => {
            if writeln!(stdout, "ready")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return 1;
            }
            serve(&pidfd, &listeners)
        }
        Err(e) => {
            let _ = writeln!(stdout, "{e}");
            2
        }
    }
}

type Listeners = Vec<(u16, TcpListener)>;

fn setup(args: &[String]) -> Result<(OwnedFd, Listeners), String> {
    let a = parse(args)?;
    let mut listeners = Vec::with_capacity(a.ports.len());
    for (i, port) in a.ports.iter().enumerate() {
        listeners.push((*port, inherited_listener(FIRST_FD + i as i32)?));
    }
    let pid = i32::try_from(a.init_pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or("init pid out of range")?;
    let pidfd = pidfd_open(pid, PidfdFlags::empty())
        .map_err(|e| format!("watching the sandbox's PID 1: {e}"))?;
    let netns = std::fs::File::open(format!("/proc/{}/ns/net", a.init_pid))
        .map_err(|e| format!("opening the sandbox's network namespace: {e}"))?;
    // Both descriptors were taken after the pid was known: they name the
    // sandbox's PID 1 only while its start time is the recorded one.
    if process_start(a.init_pid) != Some(a.init_start) {
        return Err("the sandbox's PID 1 is gone".into());
    }
    rustix::thread::move_into_link_name_space(
        netns.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| format!("entering the sandbox's network namespace: {e}"))?;
    Ok((pidfd, listeners))
}

/// Accepts until the sandbox's PID 1 exits.
fn serve(pidfd: &OwnedFd, listeners: &Listeners) -> i32 {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(listeners.len() + 1);
        fds.push(PollFd::new(pidfd, PollFlags::IN));
        for (_, l) in listeners {
            fds.push(PollFd::new(l, PollFlags::IN));
        }
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return 1,
        }
        if !fds[0].revents().is_empty() {
            return 0;
        }
        let ready: Vec<usize> = fds[1..]
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.revents().is_empty())
            .map(|(i, _)| i)
            .collect();
        drop(fds);
        for i in ready {
            let (port, listener) = &listeners[i];
            accept_all(*port, listener, &active);
        }
    }
}

/// Accepts every pending connection of `listener` and relays each to the
/// sandbox's `port` on a thread of its own.
fn accept_all(port: u16, listener: &TcpListener, active: &Arc<AtomicUsize>) {
    loop {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // WouldBlock: all taken; anything else: this one is lost, the
            // next poll retries.
            Err(_) => return,
        };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let active = active.clone();
        let spawned = std::thread::Builder::new()
            .name("corral-preview".into())
            .spawn(move || {
                relay(conn, port);
                active.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // The closure (and the connection) was dropped with the error.
            continue;
        }
    }
}

/// Copies both ways between a host connection and a new connection to the
/// sandbox's `port` (IPv4 loopback, else IPv6 loopback), half-closing each
/// side when the other finishes.
fn relay(outer: TcpStream, port: u16) {
    let _ = outer.set_nonblocking(false);
    let inner = [
        SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
    ]
    .iter()
    .find_map(|a| TcpStream::connect_timeout(a, CONNECT_TIMEOUT).ok());
    let Some(inner) = inner else {
        return;
    };
    // A relay sends what arrives at once: no Nagle delay on either side.
    let _ = outer.set_nodelay(true);
    let _ = inner.set_nodelay(true);
    let (Ok(outer2), Ok(inner2)) = (outer.try_clone(), inner.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new()
        .name("corral-preview-up".into())
        .spawn(move || pipe(outer2, inner2));
    pipe(inner, outer);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

/// Copies `from` to `to` until EOF, then half-closes `to`; on an error
/// both sockets are shut so the other direction ends too.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    match std::io::copy(&mut from, &mut to) {
        Ok(_) => {
            let _ = to.shutdown(std::net::Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(std::net::Shutdown::Both);
            let _ = to.shutdown(std::net::Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_is_checked() {
        let ok = parse(&args(&[
            "x",
            FORWARDER_FLAG,
            "/d",
            "12",
            "34",
            "80",
            "8080",
        ]))
        .unwrap();
        assert_eq!((ok.init_pid, ok.init_start), (12, 34));
        assert_eq!(ok.ports, vec![80, 8080]);
        for bad in [
            &["x", "--other", "/d", "12", "34", "80"][..],
            &["x", FORWARDER_FLAG, "/d", "12", "34"],
            &["x", FORWARDER_FLAG, "/d", "pid", "34", "80"],
            &["x", FORWARDER_FLAG, "/d", "12", "34", "0"],
            &["x", FORWARDER_FLAG, "/d", "12", "34", "65536"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
