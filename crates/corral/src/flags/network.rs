//! `--network none|allow=HOST[:PORT],CIDR,…`: the sandbox's network policy.

use corral_backend::{Destination, Network};

/// The port an allowlist entry without one gets: HTTPS, what an allowlist
/// most often opens.
pub const DEFAULT_ALLOW_PORT: u16 = 443;

/// Parses `none` or `allow=` and a comma-separated list of `HOST[:PORT]`,
/// where HOST is a DNS name, an address (`[…]` around an IPv6 one that has
/// a port) or a CIDR block, and PORT defaults to [`DEFAULT_ALLOW_PORT`].
/// Each destination is made with [`Destination::new`], which checks it;
/// its refusal is passed on (clap adds the flag).
pub fn parse(text: &str) -> Result<Network, String> {
    if text == "none" {
        return Ok(Network::None);
    }
    let Some(list) = text.strip_prefix("allow=") else {
        return Err(format!(
            "{text:?}: expected `none` or `allow=HOST[:PORT],CIDR,…`"
        ));
    };
    let mut destinations = Vec::new();
    for entry in list.split(',') {
        let (host, port) = split_port(entry)?;
        let destination = Destination::new(host, port).map_err(|e| e.to_string())?;
        if !destinations.contains(&destination) {
            destinations.push(destination);
        }
    }
    Ok(Network::Allowlist { destinations })
}

/// `entry` as a host and a port: `host:port`, `[v6]:port`, or a host
/// alone (a bare IPv6 address or block has more than one colon and no
/// port).
fn split_port(entry: &str) -> Result<(&str, u16), String> {
    let port_of = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{entry:?}: {p:?} is not a port (1 to 65535)"))
    };
    if let Some(rest) = entry.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!("{entry:?}: an unclosed '['"));
        };
        return match after {
            "" => Ok((host, DEFAULT_ALLOW_PORT)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, port_of(p)?)),
                None => Err(format!("{entry:?}: expected `:PORT` after ']'")),
            },
        };
    }
    match entry.matches(':').count() {
        1 => {
            let (host, p) = entry.split_once(':').unwrap_or((entry, ""));
            Ok((host, port_of(p)?))
        }
        _ => Ok((entry, DEFAULT_ALLOW_PORT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(list: &[(&str, u16)]) -> Network {
        Network::Allowlist {
            destinations: list
                .iter()
                .map(|(h, p)| Destination::new(h, *p).unwrap())
                .collect(),
        }
    }

    #[test]
    fn policies_parse() {
        assert_eq!(parse("none"), Ok(Network::None));
        for (text, expected) in [
            ("allow=pypi.org", allow(&[("pypi.org", 443)])),
            ("allow=PyPI.org:80", allow(&[("pypi.org", 80)])),
            (
                "allow=10.0.0.0/8,1.2.3.4:5432",
                allow(&[("10.0.0.0/8", 443), ("1.2.3.4", 5432)]),
            ),
            ("allow=[fd00::1]:8080", allow(&[("fd00::1", 8080)])),
            ("allow=fd00::/8", allow(&[("fd00::/8", 443)])),
            ("allow=a.example,a.example", allow(&[("a.example", 443)])),
        ] {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    /// Hostile or mistaken policies: each refused, naming what is wrong.
    #[test]
    fn bad_policies_are_refused_naming_the_entry() {
        for (text, needle) in [
            ("all", "expected `none` or `allow="),
            ("allow=", "host is empty"),
            ("allow=a.example,", "host is empty"),
            ("allow=a.example:0", "port 0"),
            ("allow=a.example:99999", "\"99999\" is not a port"),
            ("allow=a.example:http", "\"http\" is not a port"),
            ("allow=bad_host!", "neither a DNS name"),
            ("allow=10.0.0.0/33", "prefix length"),
            ("allow=[fd00::1", "unclosed"),
            ("allow=[fd00::1]x", "expected `:PORT`"),
            ("allow=$(reboot)", "neither a DNS name"),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
