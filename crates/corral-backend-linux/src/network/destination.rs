//! Pinning allowlist destinations: an IPv4 address, an IPv4 CIDR block or
//! a host name (resolved once, at create, by the host's resolver) — each
//! with a port — become [`Endpoint`]s, the only thing the rulesets are made
//! from.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use corral_backend::Destination;

use super::NetworkError;

/// One pinned destination: an IPv4 block (a single address is a /32) and
/// a port (TCP and UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    /// The block's first address (host bits cleared).
    pub addr: Ipv4Addr,
    /// The block's prefix length, 0..=32.
    pub prefix: u8,
    /// The port.
    pub port: u16,
}

impl Endpoint {
    /// A single address and a port.
    pub fn host(addr: Ipv4Addr, port: u16) -> Self {
        Endpoint {
            addr,
            prefix: 32,
            port,
        }
    }

    /// The block as nft writes it: `10.0.0.1` or `10.233.0.0/16`.
    pub fn daddr(&self) -> String {
        if self.prefix == 32 {
            self.addr.to_string()
        } else {
            format!("{}/{}", self.addr, self.prefix)
        }
    }

    /// Whether `a` lies in the block.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let mask = mask(self.prefix);
        u32::from(a) & mask == u32::from(self.addr)
    }
}

fn mask(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}

/// Parses `host` as a CIDR block (`10.233.0.0/16`): `None` when it has no
/// `/`; an error names what is wrong. Host bits are cleared
/// (`10.233.1.5/16` is `10.233.0.0/16`).
fn cidr(host: &str, shown: &str) -> Option<Result<(Ipv4Addr, u8), NetworkError>> {
    let (addr, len) = host.split_once('/')?;
    let bad = |why: String| NetworkError::Unsupported(format!("{shown}: {why}"));
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    Some(match addr.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => match len.parse::<u8>() {
            Ok(p) if p <= 32 && !len.starts_with('+') => {
                Ok((Ipv4Addr::from(u32::from(a) & mask(p)), p))
            }
            _ => Err(bad(format!(
                "{len:?} is not an IPv4 prefix length (0 to 32)"
            ))),
        },
        Ok(IpAddr::V6(_)) => Err(bad("is an IPv6 block (sandboxes get IPv4 only)".into())),
        Err(_) => Err(bad(format!("{addr:?} is not an IP address"))),
    })
}

/// Refuses IPv6 destinations without resolving any name (for `create`,
/// before anything is allocated). Port 0 and malformed blocks cannot reach
/// here: a [`Destination`] is refused where it is made.
pub fn check(destinations: &[Destination]) -> Result<(), NetworkError> {
    for d in destinations {
        let shown = format!("{}:{}", d.host(), d.port());
        if let Some(block) = cidr(d.host(), &shown) {
            block?;
        } else if let Ok(IpAddr::V6(_)) = d
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            return Err(NetworkError::Unsupported(format!(
                "{shown} is IPv6 (sandboxes get IPv4 only)"
            )));
        }
    }
    Ok(())
}

/// Pins `destinations`: IPv4 addresses and CIDR blocks as given, names
/// resolved once by the host (IPv4 results only); sorted, without
/// duplicates. IPv6 addresses and blocks are refused (sandboxes get IPv4
/// only).
pub fn resolve(destinations: &[Destination]) -> Result<Vec<Endpoint>, NetworkError> {
    let mut out = Vec::new();
    for d in destinations {
        let shown = format!("{}:{}", d.host(), d.port());
        if let Some(block) = cidr(d.host(), &shown) {
            let (addr, prefix) = block?;
            out.push(Endpoint {
                addr,
                prefix,
                port: d.port(),
            });
            continue;
        }
        let host = d.host().trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(IpAddr::V4(addr)) => out.push(Endpoint::host(addr, d.port())),
            Ok(IpAddr::V6(_)) => {
                return Err(NetworkError::Unsupported(format!(
                    "{shown} is IPv6 (sandboxes get IPv4 only)"
                )));
            }
            Err(_) => {
                let before = out.len();
                let addrs = (host, d.port())
                    .to_socket_addrs()
                    .map_err(|_| NetworkError::Resolve(shown.clone()))?;
                for a in addrs {
                    if let SocketAddr::V4(v4) = a {
                        out.push(Endpoint::host(*v4.ip(), d.port()));
                    }
                }
                if out.len() == before {
                    return Err(NetworkError::Resolve(shown));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_backend::ErrorCode;

    fn d(host: &str, port: u16) -> Destination {
        Destination::new(host, port).unwrap()
    }

    #[test]
    fn destinations_are_pinned_to_ipv4_endpoints() {
        let pinned = resolve(&[d("10.0.0.2", 80), d("10.0.0.1", 443), d("10.0.0.2", 80)]).unwrap();
        assert_eq!(
            pinned,
            vec![
                Endpoint::host(Ipv4Addr::new(10, 0, 0, 1), 443),
                Endpoint::host(Ipv4Addr::new(10, 0, 0, 2), 80),
            ]
        );
        let local = resolve(&[d("localhost", 8080)]).unwrap();
        assert!(local.contains(&Endpoint::host(Ipv4Addr::LOCALHOST, 8080)));
        assert!(check(&[d("10.0.0.2", 80), d("localhost", 1), d("10.0.0.0/8", 2)]).is_ok());
        assert!(check(&[d("[::1]", 80)]).is_err());
        let v6 = resolve(&[d("[::1]", 80)]).unwrap_err();
        assert_eq!(v6.code(), ErrorCode::InvalidInput);
    }

    /// Port 0 never reaches the allowlist: it is refused, in one line
    /// naming the destination, where the destination is made.
    #[test]
    fn port_zero_is_refused_in_one_line() {
        for host in ["10.0.0.1", "10.0.0.0/8", "localhost"] {
            let e = corral_backend::BackendError::from(Destination::new(host, 0).unwrap_err());
            assert_eq!(e.code(), ErrorCode::InvalidInput, "{host}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("{host}:0")) && text.contains("port 0"),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
        }
    }

    #[test]
    fn cidr_blocks_are_pinned_with_host_bits_cleared() {
        let pinned = resolve(&[d("10.233.1.5/16", 80), d("192.0.2.7/32", 53)]).unwrap();
        assert_eq!(
            pinned,
            vec![
                Endpoint {
                    addr: Ipv4Addr::new(10, 233, 0, 0),
                    prefix: 16,
                    port: 80
                },
                Endpoint::host(Ipv4Addr::new(192, 0, 2, 7), 53),
            ]
        );
        assert_eq!(pinned[0].daddr(), "10.233.0.0/16");
        assert_eq!(pinned[1].daddr(), "192.0.2.7");
        assert!(pinned[0].contains(Ipv4Addr::new(10, 233, 200, 1)));
        assert!(!pinned[0].contains(Ipv4Addr::new(10, 234, 0, 1)));
        let all = resolve(&[d("0.0.0.0/0", 443)]).unwrap();
        assert_eq!(all[0].daddr(), "0.0.0.0/0");
        assert!(all[0].contains(Ipv4Addr::new(203, 0, 113, 9)));
        // A malformed block is refused where the destination is made.
        for bad in [
            "10.0.0.0/33",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0.0.0/x",
            "example.com/8",
        ] {
            let e = corral_backend::BackendError::from(Destination::new(bad, 80).unwrap_err());
            assert_eq!(e.code(), ErrorCode::InvalidInput, "{bad}");
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
        // An IPv6 block is a destination, but not one a sandbox can reach.
        for bad in ["fd00::/8", "[fd00::]/64"] {
            assert!(check(&[d(bad, 80)]).is_err(), "{bad}");
            let e = resolve(&[d(bad, 80)]).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidInput, "{bad}");
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
    }
}
