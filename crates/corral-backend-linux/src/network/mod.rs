//! `network: allowlist`, enforced by the kernel.
//!
//! Every sandbox already has its own network namespace (loopback only —
//! that is `network: none`). An allowlisted sandbox additionally gets a
//! veth pair: the host side `crl<first 12 hex digits of the id>` in the
//! host's namespace, the sandbox side `eth0` in the init's namespace, a
//! private /30 out of [`RANGE`] (host side `.1`, sandbox `.2`, default
//! route via the host side). Destinations are pinned at create: IPv4
//! addresses and CIDR blocks (`10.233.0.0/16`) as given, host names
//! resolved once by the host's resolver (IPv4 results only); IPv6 is
//! refused ([`destination`]). No resolver is reachable from the sandbox (DNS
//! goes nowhere unless a resolver's `:53` is itself a destination).
//!
//! Enforced twice, each layer on its own sufficient for TCP/UDP:
//! * inside the sandbox's namespace, table `inet corral`: output dropped
//!   except loopback, replies, and TCP/UDP to each destination; input
//!   dropped except loopback and replies. The workload cannot change it:
//!   `corral-init` drops `CAP_NET_ADMIN` (and `CAP_SYS_ADMIN`) from the
//!   bounding set of everything the sandbox runs.
//! * on the host, table `netdev crl…` on the host side's ingress: every
//!   frame the sandbox emits — including from raw or packet sockets
//!   (`CAP_NET_RAW` is kept), which bypass the namespace's output hook —
//!   is dropped unless it is ARP for the sandbox's own address or TCP/UDP
//!   from the sandbox's address to a destination.
//!
//! Forwarding is enabled only on the host side of the veth (the per-link
//! `forwarding` sysctl), never host-wide; where the host's iptables
//! `FORWARD` chain drops by default (as Docker sets it), two rules naming
//! the link let its traffic and the replies through (the `forward` module). The backend adds no NAT: a
//! destination beyond this machine is reachable only where the host
//! routes and forwards the corral range back (an operator's choice).

mod command;
pub mod destination;
mod forward;
mod probe;
mod ruleset;

pub use destination::{Endpoint, check, resolve};
pub use probe::{REMEMBERED, available};

use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::path::Path;

use corral_backend::{
    BackendError, CreateError, Destination, ErrorCode, Network, PlatformError, RequestError,
    SetupStep,
};

use command::{Namespace, run};

/// The private range the /30s of sandboxes are taken from (used only on
/// this machine's veths).
pub const RANGE: (Ipv4Addr, u8) = (Ipv4Addr::new(10, 231, 0, 0), 16);

/// The prefix of every host-side link and host table corral makes.
pub const LINK_PREFIX: &str = "crl";

/// The file in a sandbox directory naming its host link (written before
/// the link exists, so teardown finds whatever was made).
const MARKER: &str = "network";

/// How many /30s are tried before giving up.
const ATTEMPTS: usize = 16;

/// Why the network of a sandbox could not be set up or torn down.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// A system call or file operation failed.
    #[error("{what}: {detail}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        detail: String,
    },
    /// `ip` or `nft` failed.
    #[error("{what} failed ({detail})")]
    Command {
        /// The program and its first argument.
        what: String,
        /// Its exit status and first line of stderr.
        detail: String,
    },
    /// A destination this backend cannot enforce.
    #[error("destination {0}")]
    Unsupported(String),
    /// A destination's host name did not resolve to an IPv4 address.
    #[error("destination {0} does not resolve to an IPv4 address")]
    Resolve(String),
    /// Every /30 tried was in use.
    #[error("no free address range for the sandbox's link")]
    NoSubnet,
}

impl NetworkError {
    fn io(what: impl std::fmt::Display, e: &std::io::Error) -> Self {
        Self::Io {
            what: what.to_string(),
            detail: e.to_string(),
        }
    }

    /// The backend error code this maps to before teardown (what
    /// [`Self::into_backend`] gives in [`Phase::Check`] and [`Phase::Setup`]).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unsupported(_) | Self::Resolve(_) => ErrorCode::InvalidInput,
            Self::Io { .. } | Self::Command { .. } | Self::NoSubnet => ErrorCode::Unavailable,
        }
    }

    /// The one mapping onto the backend's errors: a destination that cannot
    /// be enforced is the request's fault; the host failing is a failed
    /// create step (or the platform being unavailable, before one), and
    /// `io` while tearing down.
    pub fn into_backend(self, phase: Phase<'_>) -> BackendError {
        let detail = self.to_string();
        match (phase, self) {
            (Phase::Teardown, _) => PlatformError::Io {
                what: "network teardown".into(),
                kind: std::io::ErrorKind::Other,
                detail,
            }
            .into(),
            (_, Self::Unsupported(_) | Self::Resolve(_)) => {
                RequestError::NetworkDestination { detail }.into()
            }
            (Phase::Check, _) => PlatformError::Unavailable {
                what: "network".into(),
                detail,
            }
            .into(),
            (Phase::Setup(id), _) => CreateError::Setup {
                id: id.into(),
                step: SetupStep::Network,
                detail,
            }
            .into(),
        }
    }
}

/// When a network failure happened, which decides what it means to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase<'a> {
    /// Checking a request's allowlist, before anything is made.
    Check,
    /// Setting up sandbox `.0`'s network.
    Setup(&'a str),
    /// Tearing a sandbox's network down.
    Teardown,
}

/// The veth of one sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The host side's name, `crl<12 hex>`.
    pub host_name: String,
    /// The host side's address.
    pub host_addr: Ipv4Addr,
    /// The sandbox side's (`eth0`) address.
    pub sandbox_addr: Ipv4Addr,
}

impl Link {
    /// The link of the sandbox whose id ends in `short` (12 hex digits),
    /// on /30 number `index` (1..16384) of [`RANGE`].
    pub fn for_index(short: &str, index: u32) -> Self {
        let base = u32::from(RANGE.0) + (index % (1 << (32 - RANGE.1 - 2))) * 4;
        Link {
            host_name: format!("{LINK_PREFIX}{short}"),
            host_addr: Ipv4Addr::from(base + 1),
            sandbox_addr: Ipv4Addr::from(base + 2),
        }
    }

    fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.host_addr) & !3)
    }
}

/// The host link name of sandbox `id` (`lnx-<16 hex>`).
pub fn link_name(id: &str) -> String {
    let hex = id.rsplit('-').next().unwrap_or(id);
    format!("{LINK_PREFIX}{}", &hex[..hex.len().min(12)])
}

/// Gives sandbox `id` (directory `dir`, PID 1 `init_pid`) the network its
/// request asks for: nothing to do for `none`/default; for an allowlist,
/// the veth, addresses, route and both rulesets. Called once PID 1 runs
/// and before any workload can. Whatever was made is removed by
/// [`teardown`], also after a failure here.
pub fn apply(dir: &Path, id: &str, init_pid: u32, network: &Network) -> corral_backend::Result<()> {
    let Network::Allowlist { destinations } = network else {
        return Ok(());
    };
    setup(dir, id, init_pid, destinations).map_err(|e| e.into_backend(Phase::Setup(id)))
}

fn setup(
    dir: &Path,
    id: &str,
    init_pid: u32,
    destinations: &[Destination],
) -> Result<(), NetworkError> {
    let endpoints = resolve(destinations)?;
    let name = link_name(id);
    let short = &name[LINK_PREFIX.len()..];
    // Atomic: a creator killed here leaves either no marker or a whole one.
    crate::state::write_atomic(&dir.join(MARKER), name.as_bytes())
        .map_err(|e| NetworkError::io("marking", &e))?;
    let netns: OwnedFd = std::fs::File::open(format!("/proc/{init_pid}/ns/net"))
        .map_err(|e| NetworkError::io("opening the sandbox's network namespace", &e))?
        .into();
    let pid = init_pid.to_string();
    let mut link = None;
    for _ in 0..ATTEMPTS {
        let candidate = Link::for_index(short, random_index()?);
        if routes_to(candidate.network()) > 0 {
            continue;
        }
        run(
            "ip",
            &[
                "link", "add", &name, "type", "veth", "peer", "name", "eth0", "netns", &pid,
            ],
            None,
            Namespace::Host,
        )?;
        // The filter exists before the link is up.
        let rules = ruleset::host_ruleset(&candidate, &endpoints);
        run("nft", &["-f", "-"], Some(&rules), Namespace::Host)?;
        let cidr = format!("{}/30", candidate.host_addr);
        run(
            "ip",
            &["addr", "add", &cidr, "dev", &name],
            None,
            Namespace::Host,
        )?;
        run("ip", &["link", "set", &name, "up"], None, Namespace::Host)?;
        // A concurrent create may have taken the same /30: give it up.
        if routes_to(candidate.network()) == 1 {
            link = Some(candidate);
            break;
        }
        remove_host_side(&name)?;
    }
    let link = link.ok_or(NetworkError::NoSubnet)?;
    std::fs::write(format!("/proc/sys/net/ipv4/conf/{name}/forwarding"), "1")
        .map_err(|e| NetworkError::io("enabling forwarding on the host link", &e))?;
    forward::allow(&name)?;
    let inside = Namespace::Enter(&netns);
    let rules = ruleset::sandbox_ruleset(&endpoints);
    run("nft", &["-f", "-"], Some(&rules), inside)?;
    let cidr = format!("{}/30", link.sandbox_addr);
    let gateway = link.host_addr.to_string();
    run("ip", &["addr", "add", &cidr, "dev", "eth0"], None, inside)?;
    run("ip", &["link", "set", "eth0", "up"], None, inside)?;
    run(
        "ip",
        &["route", "add", "default", "via", &gateway],
        None,
        inside,
    )?;
    Ok(())
}

/// Reclaims host tables corral made whose link is gone (the kernel keeps
/// a `netdev` table after its device disappears; a live sandbox always has
/// its link, which exists before its table), and the `FORWARD` rules of
/// links that are gone. Returns the links whose leftovers were removed.
pub fn sweep_tables() -> Result<Vec<String>, NetworkError> {
    let listing = run("nft", &["list", "tables", "netdev"], None, Namespace::Host)?;
    let mut removed = Vec::new();
    for name in listing
        .lines()
        .filter_map(|l| l.trim().strip_prefix("table netdev "))
        .filter(|n| is_link_name(n))
    {
        if !Path::new("/sys/class/net").join(name).exists() {
            remove_host_side(name)?;
            removed.push(name.to_string());
        }
    }
    for link in forward::sweep(|l| Path::new("/sys/class/net").join(l).exists())? {
        if !removed.contains(&link) {
            removed.push(link);
        }
    }
    Ok(removed)
}

/// Removes what [`apply`] made for the sandbox in `dir` (its host link —
/// which takes `eth0` with it — and its host table). Idempotent; a sandbox
/// without an allowlist has nothing to remove.
pub fn teardown(dir: &Path) -> corral_backend::Result<()> {
    let marker = dir.join(MARKER);
    let Ok(name) = std::fs::read_to_string(&marker) else {
        return Ok(());
    };
    let fail = |e: NetworkError| e.into_backend(Phase::Teardown);
    // The marker's presence is what counts; its name is derived from the
    // sandbox's own id when the marker is unreadable (an older, torn write).
    let name = if is_link_name(&name) {
        name
    } else {
        match dir.file_name().and_then(|n| n.to_str()) {
            Some(id) => link_name(id),
            None => {
                return Err(fail(NetworkError::Unsupported(format!(
                    "marker names {name:?} in a directory without a sandbox id"
                ))));
            }
        }
    };
    remove_host_side(&name).map_err(fail)?;
    let _ = std::fs::remove_file(&marker);
    Ok(())
}

/// Whether `name` is a host link name corral makes.
pub fn is_link_name(name: &str) -> bool {
    name.strip_prefix(LINK_PREFIX).is_some_and(|hex| {
        hex.len() == 12 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn remove_host_side(name: &str) -> Result<(), NetworkError> {
    forward::remove(name)?;
    let link = Path::new("/sys/class/net").join(name);
    if link.exists()
        && let Err(e) = run("ip", &["link", "del", name], None, Namespace::Host)
        // The link also goes when the sandbox's namespace dies, which the
        // kernel finishes asynchronously after PID 1 exits.
        && link.exists()
    {
        return Err(e);
    }
    if let Err(e) = run(
        "nft",
        &["delete", "table", "netdev", name],
        None,
        Namespace::Host,
    ) {
        // Absent already is fine; present and undeletable is not.
        if run(
            "nft",
            &["list", "table", "netdev", name],
            None,
            Namespace::Host,
        )
        .is_ok()
        {
            return Err(e);
        }
    }
    Ok(())
}

/// How many routes of the host's main table have destination `net`/30.
fn routes_to(net: Ipv4Addr) -> usize {
    let Ok(text) = std::fs::read_to_string("/proc/net/route") else {
        return 0;
    };
    // Destination and mask are hex in host byte order of a little-endian
    // machine's network-order bytes: compare as parsed u32 of the bytes.
    let want = u32::from_ne_bytes(net.octets());
    let mask = u32::from_ne_bytes([255, 255, 255, 252]);
    text.lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 7
                && u32::from_str_radix(f[1], 16).is_ok_and(|d| d == want)
                && u32::from_str_radix(f[7], 16).is_ok_and(|m| m == mask)
        })
        .count()
}

/// A random /30 number in 1..16384.
fn random_index() -> Result<u32, NetworkError> {
    let b = corral_backend::statefile::random_bytes::<4>()
        .map_err(|e| NetworkError::io("reading random bytes", &e))?;
    Ok(u32::from_ne_bytes(b) % ((1 << (32 - RANGE.1 - 2)) - 1) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses_follow_the_id() {
        assert_eq!(link_name("lnx-0123456789abcdef"), "crl0123456789ab");
        assert!(is_link_name("crl0123456789ab"));
        assert!(!is_link_name("crl0123456789aB"));
        assert!(!is_link_name("eth0"));
        let l = Link::for_index("0123456789ab", 1);
        assert_eq!(l.host_addr, Ipv4Addr::new(10, 231, 0, 5));
        assert_eq!(l.sandbox_addr, Ipv4Addr::new(10, 231, 0, 6));
        assert_eq!(l.network(), Ipv4Addr::new(10, 231, 0, 4));
        let last = Link::for_index("0123456789ab", 16383);
        assert_eq!(last.sandbox_addr, Ipv4Addr::new(10, 231, 255, 254));
    }
}
