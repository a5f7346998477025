//! What one server gives its clients, at most: connections in all and per
//! peer address, time to send a request's head and its body. A flood of
//! idle connections holds at most the cap, each for at most the head
//! deadline, so an authorised client gets a connection soon after; the
//! accept loop backs off when the process runs out of descriptors instead
//! of spinning on `EMFILE`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bounds a server holds its connections to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once; at the cap, no more are accepted until
    /// one ends (the kernel holds the rest in its backlog).
    pub max_connections: usize,
    /// Connections served at once from one peer address; a connection past
    /// it is closed as soon as it is accepted.
    pub max_per_peer: usize,
    /// How long a connection may take to send a request's head, counted
    /// from when it is accepted or its previous response ended: an idle
    /// connection is closed after it. Over TLS the handshake is bounded by
    /// it too, before the first head's own.
    pub head_deadline: Duration,
    /// How long a client may take to send a request's body.
    pub body_deadline: Duration,
    /// How long the accept loop sleeps when the process or the system is
    /// out of descriptors (`EMFILE`, `ENFILE`).
    pub accept_backoff: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 1024,
            max_per_peer: 128,
            head_deadline: Duration::from_secs(10),
            body_deadline: Duration::from_secs(120),
            accept_backoff: Duration::from_millis(100),
        }
    }
}

/// Whether an `accept` error means descriptors ran out (back off), rather
/// than one connection failing (go on).
pub(crate) fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::MFILE | rustix::io::Errno::NFILE)
    )
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit, so a
/// server's cap, not the default soft limit, is what bounds its
/// connections. Returns the soft limit in force afterwards (`None` when it
/// cannot be read).
pub fn raise_descriptor_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return raised.current;
        }
    }
    limit.current
}

/// Connections served per peer address.
#[derive(Debug, Default)]
pub(crate) struct Peers {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection of a peer; dropping it frees its place.
pub(crate) struct PeerSlot {
    peers: Arc<Peers>,
    ip: IpAddr,
}

/// The peer a connection from `ip` counts against: the address itself for
/// IPv4, its /64 for IPv6 (one host is routinely given a whole /64, so
/// counting single addresses there would be no limit at all). An IPv4
/// address mapped into IPv6 counts as itself.
pub(crate) fn peer_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

impl Peers {
    /// A place for one more connection from `ip` (counted by
    /// [`peer_of`]), unless that peer holds `max`.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<PeerSlot> {
        let ip = peer_of(ip);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_peers_count_by_their_64_and_mapped_ipv4_as_itself() {
        let p = |s: &str| peer_of(s.parse().unwrap());
        assert_eq!(p("2001:db8:1:2:aaaa::1"), p("2001:db8:1:2:bbbb::2"));
        assert_ne!(p("2001:db8:1:2::1"), p("2001:db8:1:3::1"));
        assert_eq!(p("::ffff:127.0.0.2"), p("127.0.0.2"));
        assert_ne!(p("127.0.0.1"), p("127.0.0.2"));
    }

    #[test]
    fn a_peer_gets_its_share_and_its_places_back() {
        let peers = Arc::new(Peers::default());
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let first = peers.admit(a, 2).unwrap();
        let _second = peers.admit(a, 2).unwrap();
        assert!(peers.admit(a, 2).is_none(), "a third from the same peer");
        assert!(peers.admit(b, 2).is_some(), "another peer is not affected");
        drop(first);
        assert!(
            peers.admit(a, 2).is_some(),
            "a closed connection frees its place"
        );
    }

    #[test]
    fn only_descriptor_exhaustion_backs_off() {
        let emfile = std::io::Error::from_raw_os_error(libc_emfile());
        assert!(out_of_descriptors(&emfile));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        assert!(!out_of_descriptors(&reset));
    }

    fn libc_emfile() -> i32 {
        rustix::io::Errno::MFILE.raw_os_error()
    }
}
