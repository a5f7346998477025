//! [`Destination`]: one endpoint of a network allowlist, validated once,
//! where it is made.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::error::RequestError;

/// The longest host a destination names, in bytes (a DNS name's bound).
pub const MAX_DESTINATION_HOST_BYTES: usize = 253;

/// A network endpoint a sandbox may reach under an allowlist: a host and
/// a port from 1 to 65535.
///
/// The host is one of:
/// - a DNS name (lowercased; labels of `a-z 0-9 -`, see
///   [`corral_contract::valid_dns_name`]), which a backend resolves once,
///   at create;
/// - an IPv4 or IPv6 address (an IPv6 one with or without brackets);
/// - an address block in CIDR form (`10.0.0.0/8`, `fd00::/8`), its prefix
///   within the family's width.
///
/// Whether a backend can enforce a given family is the backend's to say
/// (the linux backend gives sandboxes IPv4 only). A value of this type
/// was checked when it was made ([`Destination::new`], or decoding), so
/// no backend checks its shape again.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawDestination", into = "RawDestination")]
pub struct Destination {
    host: String,
    port: u16,
}

/// The wire form: `{"host": …, "port": …}`.
#[derive(Serialize, Deserialize)]
struct RawDestination {
    host: String,
    port: u16,
}

impl TryFrom<RawDestination> for Destination {
    type Error = RequestError;

    fn try_from(raw: RawDestination) -> Result<Self, RequestError> {
        Destination::new(&raw.host, raw.port)
    }
}

impl From<Destination> for RawDestination {
    fn from(d: Destination) -> Self {
        RawDestination {
            host: d.host,
            port: d.port,
        }
    }
}

fn refuse(host: &str, port: u16, why: &str) -> RequestError {
    let shown: String = host
        .chars()
        .take(80)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    RequestError::NetworkDestination {
        detail: format!("{shown}:{port}: {why}"),
    }
}

/// Whether `text` is an address, bracketed or not.
fn address(text: &str) -> Option<IpAddr> {
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse().ok()
}

impl Destination {
    /// The destination `host:port`, its host checked as the type's doc says
    /// (a name is lowercased).
    ///
    /// # Errors
    ///
    /// `invalid_input` ([`RequestError::NetworkDestination`]) naming the
    /// destination and what is wrong: port 0, an empty or overlong host, a
    /// host that is neither a name nor an address, a block whose prefix is
    /// not a number within its family's width.
    pub fn new(host: &str, port: u16) -> Result<Self, RequestError> {
        if port == 0 {
            return Err(refuse(
                host,
                port,
                "port 0 is not a port a connection can reach (give 1 to 65535)",
            ));
        }
        if host.is_empty() {
            return Err(refuse(host, port, "the host is empty"));
        }
        if host.len() > MAX_DESTINATION_HOST_BYTES {
            return Err(refuse(
                host,
                port,
                &format!("the host is longer than {MAX_DESTINATION_HOST_BYTES} bytes"),
            ));
        }
        if let Some((addr, prefix)) = host.split_once('/') {
            let Some(ip) = address(addr) else {
                return Err(refuse(host, port, "a block's address is not an IP address"));
            };
            let width = if ip.is_ipv4() { 32 } else { 128 };
            let ok = !prefix.is_empty()
                && prefix.bytes().all(|b| b.is_ascii_digit())
                && prefix.parse::<u8>().is_ok_and(|p| p <= width);
            if !ok {
                return Err(refuse(
                    host,
                    port,
                    &format!("{prefix:?} is not a prefix length (0 to {width})"),
                ));
            }
            return Ok(Destination {
                host: host.to_owned(),
                port,
            });
        }
        if address(host).is_some() {
            return Ok(Destination {
                host: host.to_owned(),
                port,
            });
        }
        let name = host.to_ascii_lowercase();
        if !corral_contract::valid_dns_name(&name) {
            return Err(refuse(
                host,
                port,
                "the host is neither a DNS name (a-z 0-9 - in dot-separated labels) nor an IP \
                 address or block",
            ));
        }
        Ok(Destination { host: name, port })
    }

    /// The host: a lowercase name, an address or a block, as given.
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, 1 to 65535.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    /// Contract row "Allowlist egress: only the declared outbound hosts are
    /// reachable" starts with a declaration that means one thing: a hostile
    /// or mistaken destination → its refusal; a good one → the host it keeps.
    #[test]
    fn a_destination_is_checked_once_where_it_is_made() {
        let long = "a".repeat(254);
        let rows: [(&str, u16, Result<&str, &str>); 16] = [
            ("example.com", 443, Ok("example.com")),
            ("Example.COM", 443, Ok("example.com")),
            ("10.0.0.1", 80, Ok("10.0.0.1")),
            ("10.233.0.0/16", 53, Ok("10.233.0.0/16")),
            ("[::1]", 80, Ok("[::1]")),
            ("fd00::/8", 80, Ok("fd00::/8")),
            ("example.com", 0, Err("port 0")),
            ("", 80, Err("the host is empty")),
            (&long, 80, Err("longer than 253 bytes")),
            (
                "10.0.0.0/33",
                80,
                Err("\"33\" is not a prefix length (0 to 32)"),
            ),
            ("10.0.0.0/+8", 80, Err("not a prefix length")),
            ("fd00::/129", 80, Err("(0 to 128)")),
            ("nowhere/8", 80, Err("not an IP address")),
            ("*.example.com", 80, Err("neither a DNS name")),
            ("a b", 80, Err("neither a DNS name")),
            ("evil\n.com", 80, Err("neither a DNS name")),
        ];
        for (host, port, want) in rows {
            match (Destination::new(host, port), want) {
                (Ok(d), Ok(kept)) => assert_eq!((d.host(), d.port()), (kept, port), "{host:?}"),
                (Err(e), Err(why)) => {
                    let e = crate::BackendError::from(e);
                    assert_eq!(e.code(), ErrorCode::InvalidInput, "{host:?}");
                    assert!(e.message().contains(why), "{host:?}: {e}");
                    assert!(!e.message().contains('\n'), "{host:?}: one line: {e}");
                }
                (got, _) => panic!("{host:?}:{port}: {got:?}"),
            }
        }
    }

    /// Decoding is making: a malformed destination on the wire is refused
    /// as [`Destination::new`] refuses it.
    #[test]
    fn decoding_checks_as_making_does() {
        let ok: Destination = serde_json::from_str(r#"{"host":"Example.com","port":443}"#).unwrap();
        assert_eq!(ok.host(), "example.com");
        for bad in [
            r#"{"host":"example.com","port":0}"#,
            r#"{"host":"a b","port":1}"#,
            r#"{"host":"10.0.0.0/40","port":1}"#,
        ] {
            assert!(serde_json::from_str::<Destination>(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"host":"example.com","port":443}"#
        );
    }
}
